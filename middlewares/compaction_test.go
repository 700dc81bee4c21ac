package middlewares_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

func TestCompaction(t *testing.T) {
	long := strings.Repeat("word ", 100) // 500 bytes, ~125 tokens
	tests := []struct {
		name   string
		cfg    middlewares.CompactionConfig
		blocks []events.Block
		// want lists the IDs after the run, "SUM" for the summary; nil
		// means no event.
		want []string
	}{
		{
			name:   "under budget: nothing",
			cfg:    middlewares.CompactionConfig{MaxBlocks: 10, KeepLast: 2},
			blocks: []events.Block{sys("s", "p"), user("u1", "a"), llm("a1", "b"), user("u2", "c")},
		},
		{
			name: "over MaxBlocks: the oldest part becomes a summary, system blocks stay",
			cfg:  middlewares.CompactionConfig{MaxBlocks: 6, KeepLast: 3},
			blocks: []events.Block{
				sys("s", "p"), user("u1", "one"), llm("a1", "two"), user("u2", "three"), llm("a2", "four"),
				user("u3", "five"), reasoning("r3"), llm("a3", "six"),
			},
			want: []string{"s", "SUM", "u3", "r3", "a3"},
		},
		{
			name: "over MaxTokens",
			cfg:  middlewares.CompactionConfig{MaxTokens: 300, KeepLast: 2},
			blocks: []events.Block{
				sys("s", "p"), user("u1", long), llm("a1", long), user("u2", "short"), llm("a2", long),
			},
			want: []string{"s", "SUM", "u2", "a2"},
		},
		{
			name: "a cut between reasoning and its follower moves back",
			cfg:  middlewares.CompactionConfig{MaxBlocks: 7, KeepLast: 3},
			blocks: []events.Block{
				sys("s", "p"), user("x", "x"), llm("y", "y"),
				user("u0", "q"), reasoning("r0"), llm("a0", "a"), // cut would fall between r0 and a0
				user("u1", "q"), llm("a1", "a"),
			},
			want: []string{"s", "SUM", "r0", "a0", "u1", "a1"},
		},
		{
			name: "a cut between a tool call and its result moves back",
			cfg:  middlewares.CompactionConfig{MaxBlocks: 7, KeepLast: 4},
			blocks: []events.Block{
				sys("s", "p"), user("u0", "q"), llm("a0", "a"),
				user("u1", "count"), reasoning("r1"), call("c1", "k1"), result("t1", "k1"), llm("a1", "2"), // cut would fall between c1 and t1
				user("u2", "q"), llm("a2", "a"),
			},
			want: []string{"s", "SUM", "r1", "c1", "t1", "a1", "u2", "a2"},
		},
		{
			name: "the last user block and what follows it are kept, whatever KeepLast says",
			cfg:  middlewares.CompactionConfig{MaxBlocks: 5, KeepLast: 2},
			blocks: []events.Block{
				sys("s", "p"), user("u0", "q"), llm("a0", "a"),
				user("u1", "count"), reasoning("r1"), call("c1", "k1"), result("t1", "k1"),
			},
			want: []string{"s", "SUM", "u1", "r1", "c1", "t1"},
		},
		{
			name: "context sections are not compacted",
			cfg:  middlewares.CompactionConfig{MaxBlocks: 5, KeepLast: 2},
			blocks: []events.Block{
				sys("s", "p"), user("ctx", "profile", events.MetaSection, "user_context"),
				user("u0", "q"), llm("a0", "a"), user("u1", "q"), llm("a1", "a"),
			},
			want: []string{"s", "ctx", "SUM", "u1", "a1"},
		},
		{
			name: "one removable block is not worth a summary",
			cfg:  middlewares.CompactionConfig{MaxBlocks: 3, KeepLast: 1},
			blocks: []events.Block{
				sys("s", "p"), sys("g", "policy"), user("u0", "q"), user("u1", "q"),
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Summarizer = middlewares.FirstWords{Words: 3}
			mw := middlewares.Must(middlewares.Compaction(tc.cfg))
			tx := txOf(t, tc.blocks...)
			first, second := runTwice(t, mw, tx)
			assert.Empty(t, second, "a compacted turn is not compacted again at once")
			if tc.want == nil {
				assert.Empty(t, first)
				assert.Equal(t, idsOf(tc.blocks), idsOf(tx.Turn().Blocks))
				return
			}
			require.Len(t, first, 1)
			assert.Equal(t, events.TypeTurnCompacted, first[0].Type)
			assert.Equal(t, middlewares.ActorCompaction, first[0].Actor)
			p := first[0].Payload.(events.TurnCompacted)
			require.NotNil(t, p.Summary)
			assert.Equal(t, events.KindOther, p.Summary.Kind)
			assert.Equal(t, "conversation", p.Summary.Meta[events.MetaSection])
			assert.Equal(t, "true", p.Summary.Meta[middlewares.MetaCompactionSummary])
			assert.Equal(t, events.Untrusted, p.Summary.Trust)
			assert.Contains(t, p.Summary.Text, "Summary of ")
			assert.NotEmpty(t, p.Reason)

			var got []string
			for _, b := range tx.Turn().Blocks {
				if b.ID == p.Summary.ID {
					got = append(got, "SUM")
				} else {
					got = append(got, b.ID)
				}
			}
			assert.Equal(t, tc.want, got)
			assertUnitsIntact(t, tx.Turn().Blocks)
			for i, b := range tx.Turn().Blocks {
				if b.Kind == events.KindReasoning && i+1 < len(tx.Turn().Blocks) {
					k := tx.Turn().Blocks[i+1].Kind
					assert.Contains(t, []events.Kind{events.KindLLMText, events.KindToolCall}, k, "reasoning %s lost its follower", b.ID)
				}
			}
		})
	}
}

// A summary is bounded whatever the summarizer returns, and one compaction
// asks for a bounded transcript: issue 24's conversation whose summary
// repeated its 8 MB transcript, a step no server stores.
func TestCompactionBounds(t *testing.T) {
	big := strings.Repeat("é", 3000) // 6000 bytes
	var blocks []events.Block
	blocks = append(blocks, sys("s", "p"))
	for i := range 10 {
		id := string(rune('a' + i))
		blocks = append(blocks, user("u"+id, big), reasoning("r"+id), llm("l"+id, big))
	}
	var asked []events.Block
	echo := middlewares.SummarizerFunc(func(_ context.Context, _ *engine.Tx, bs []events.Block) (string, error) {
		asked = bs
		return middlewares.Transcript(bs), nil // as long as the transcript, like the scripted engine's echo
	})
	mw := middlewares.Must(middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: 20, KeepLast: 3, Summarizer: echo,
		MaxSummaryBytes: 1001, MaxInputBytes: 30000}))
	tx := txOf(t, blocks...)
	_, emitted, err := run(t, mw, tx)
	require.NoError(t, err)
	require.Len(t, emitted, 1)
	p := emitted[0].Payload.(events.TurnCompacted)
	assert.LessOrEqual(t, len(p.Summary.Text), 1001, "the stored summary is cut at MaxSummaryBytes")
	assert.True(t, utf8.ValidString(p.Summary.Text), "and cut between characters")
	assert.True(t, strings.HasSuffix(p.Summary.Text, "…"))
	assert.Contains(t, p.Reason, "the summary was cut from")
	assert.Equal(t, []string{"ua", "ra", "la", "ub", "rb", "lb"}, idsOf(asked),
		"the oldest whole requests whose transcript fits in MaxInputBytes")
	assert.Equal(t, idsOf(asked), p.Removed)
	assertUnitsIntact(t, tx.Turn().Blocks)

	// Still over budget: the next request compacts the summary and more.
	_, emitted, err = run(t, mw, tx)
	require.NoError(t, err)
	require.Len(t, emitted, 1)
	assert.Equal(t, "true", asked[0].Meta[middlewares.MetaCompactionSummary], "the earlier summary comes first")

	// MaxInputBlocks bounds the blocks removed, and so the IDs stored.
	mw = middlewares.Must(middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: 20, KeepLast: 3, Summarizer: echo, MaxInputBlocks: 4}))
	tx = txOf(t, blocks...)
	_, emitted, err = run(t, mw, tx)
	require.NoError(t, err)
	require.Len(t, emitted, 1)
	assert.Equal(t, []string{"ua", "ra", "la", "ub"}, emitted[0].Payload.(events.TurnCompacted).Removed, "whole units only, at most 4 blocks")
}

func TestCompactionSummarizerError(t *testing.T) {
	boom := errors.New("model down")
	mw := middlewares.Must(middlewares.Compaction(middlewares.CompactionConfig{
		MaxBlocks: 3, KeepLast: 1,
		Summarizer: middlewares.SummarizerFunc(func(context.Context, *engine.Tx, []events.Block) (string, error) { return "", boom }),
	}))
	called, evs, err := run(t, mw, txOf(t, user("u0", "a"), llm("a0", "b"), user("u1", "c"), llm("a1", "d"), user("u2", "e")))
	assert.ErrorIs(t, err, boom)
	assert.False(t, called)
	assert.Empty(t, evs)
}

func TestFirstWords(t *testing.T) {
	got, err := middlewares.FirstWords{Words: 4}.Summarize(context.Background(), nil, []events.Block{user("u", "count the words"), llm("a", "in this text please")})
	require.NoError(t, err)
	assert.Equal(t, "Summary of 2 blocks: count the words in...", got)
}

func TestEngineSummarizer(t *testing.T) {
	var purpose string
	var input []events.Block
	spy := engine.EngineFunc(func(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
		purpose = engine.PurposeFrom(ctx)
		input = in.Turn.Blocks
		return scripted.New(nil).Infer(ctx, in, delta)
	})
	s := middlewares.EngineSummarizer{Engine: spy, Model: "small"}
	blocks := []events.Block{user("u", "hello"), reasoning("r"), call("c", "k"), result("t", "k"), llm("a", "there")}
	tx := txOf(t, blocks...)
	got, err := s.Summarize(context.Background(), tx, blocks)
	require.NoError(t, err)
	assert.Equal(t, middlewares.PurposeCompaction, purpose)
	require.Len(t, input, 2)
	assert.Equal(t, events.KindSystem, input[0].Kind)
	assert.Equal(t, middlewares.DefaultSummaryInstruction, input[0].Text)
	assert.Equal(t, "[user] hello\n[tool call] word_count({\"text\":\"a b\"})\n[tool result] 2\n[assistant] there\n", input[1].Text)
	assert.Equal(t, "Summary of 4 transcript lines: [user] hello [tool call] word_count({\"text\":\"a b\"}) [tool result] 2 [assistant] there", got,
		"the scripted engine's summary is short")

	// The call is in the log: started (committed before the model was
	// asked, with what its input was made of), finished (pending).
	require.Len(t, tx.Committed(), 1)
	started, ok := tx.Committed()[0].Payload.(events.InferenceStarted)
	require.True(t, ok)
	assert.Equal(t, engine.ActorEngine, tx.Committed()[0].Actor)
	assert.Equal(t, middlewares.PurposeCompaction, started.Purpose)
	assert.Equal(t, "small", started.Model)
	assert.Equal(t, middlewares.DefaultSummaryInstruction, started.Instructions)
	assert.Equal(t, []string{"u", "r", "c", "t", "a"}, started.InputBlocks)
	assert.Equal(t, projector.Hash(middlewares.SummaryInput(middlewares.DefaultSummaryInstruction, blocks)), started.InputHash)
	assert.Equal(t, 2, started.Blocks)
	assert.Equal(t, middlewares.SummaryInstructionID, started.SystemPromptID)
	assert.Equal(t, projector.HashText(middlewares.DefaultSummaryInstruction), started.SystemPromptHash)
	require.Len(t, tx.Pending(), 1)
	finished, ok := tx.Pending()[0].Payload.(events.InferenceFinished)
	require.True(t, ok)
	assert.Equal(t, started.InferenceID, finished.InferenceID)
	assert.Positive(t, finished.CompletionTokens)
	assert.Len(t, tx.Turn().Blocks, len(blocks), "the summary is not added to the Turn by the call")

	_, err = middlewares.EngineSummarizer{Engine: engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
		return engine.Output{}, nil
	})}.Summarize(context.Background(), txOf(t, user("u", "x")), []events.Block{user("u", "x")})
	assert.ErrorContains(t, err, "no text")

	_, err = s.Summarize(context.Background(), nil, blocks)
	assert.ErrorContains(t, err, "no Tx to record the model call in")
}

// A failed summary call is in the log too: inference.failed is committed
// before the error is returned, whatever becomes of the request.
func TestEngineSummarizerFailureIsRecorded(t *testing.T) {
	boom := engine.Transient(errors.New("429 slow down"))
	s := middlewares.EngineSummarizer{Engine: engine.EngineFunc(func(context.Context, engine.Input, func(engine.Delta)) (engine.Output, error) {
		return engine.Output{}, boom
	})}
	blocks := []events.Block{user("u", "a"), llm("a", "b")}
	tx := txOf(t, blocks...)
	_, err := s.Summarize(context.Background(), tx, blocks)
	require.ErrorIs(t, err, engine.ErrTransient)
	assert.Equal(t, []events.Type{events.TypeInferenceStarted, events.TypeInferenceFailed}, typesOf(tx.Committed()))
	failed := tx.Committed()[1].Payload.(events.InferenceFailed)
	assert.True(t, failed.Transient)
	assert.Equal(t, "429 slow down", failed.Error)
	assert.Empty(t, tx.Pending())
}

// SummaryInput's layout is part of the log's format: replay --verify
// rebuilds recorded summary inputs with it. If this test fails, recorded
// summaries no longer verify: keep the old layout for them.
func TestSummaryInputLayout(t *testing.T) {
	in := middlewares.SummaryInput("Summarize.", []events.Block{
		user("u", "hello"), reasoning("r"), call("c", "k"), result("t", "k"), llm("a", "there"),
		{ID: "s", Kind: events.KindOther, Text: "earlier"}, {ID: "x", Kind: events.KindSystem, Text: "sys"},
	})
	require.Len(t, in.Blocks, 2)
	assert.Equal(t, "[user] hello\n[tool call] word_count({\"text\":\"a b\"})\n[tool result] 2\n[assistant] there\n[earlier summary] earlier\n[system] sys\n",
		in.Blocks[1].Text)
	assert.Equal(t, "v2:e2d803d423f6e5129b808f4db6cc46dd25e2b9337a204b45eae3baa11b15eebf", projector.Hash(in))
}

func TestCompactionConfigValidate(t *testing.T) {
	s := middlewares.FirstWords{}
	tests := []struct {
		name    string
		cfg     middlewares.CompactionConfig
		wantErr string
	}{
		{"blocks", middlewares.CompactionConfig{MaxBlocks: 20, Summarizer: s}, ""},
		{"tokens", middlewares.CompactionConfig{MaxTokens: 1000, Summarizer: s}, ""},
		{"no budget", middlewares.CompactionConfig{Summarizer: s}, "neither MaxBlocks nor MaxTokens"},
		{"negative", middlewares.CompactionConfig{MaxBlocks: -1, Summarizer: s}, "must not be negative"},
		{"no summarizer", middlewares.CompactionConfig{MaxBlocks: 20}, "Summarizer is nil"},
		{"no room for the summary", middlewares.CompactionConfig{MaxBlocks: 9, KeepLast: 8, Summarizer: s}, "leaves no room"},
		{"keep nothing", middlewares.CompactionConfig{MaxBlocks: 9, KeepLast: -1, Summarizer: s}, "keep at least"},
		{"tiny summary", middlewares.CompactionConfig{MaxBlocks: 20, MaxSummaryBytes: 10, Summarizer: s}, "at least 64 bytes"},
		{"one block a compaction", middlewares.CompactionConfig{MaxBlocks: 20, MaxInputBlocks: 1, Summarizer: s}, "at least 2 blocks"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middlewares.Compaction(tc.cfg)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}
