package middlewares_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// memTemplates is a TemplateSource in memory that, like the store, keeps
// every template it was set to.
type memTemplates struct {
	current string
	all     map[string]string
	err     error
}

func newMemTemplates(text string) *memTemplates {
	m := &memTemplates{all: map[string]string{}}
	m.set(text)
	return m
}

func (m *memTemplates) set(text string) {
	m.current = text
	m.all[projector.HashText(text)] = text
}

func (m *memTemplates) Template(context.Context) (string, error) { return m.current, m.err }

func (m *memTemplates) TemplateByHash(_ context.Context, hash string) (string, bool, error) {
	t, ok := m.all[hash]
	return t, ok, m.err
}

// clock is a settable Now for system:time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func templateMW(t *testing.T, cfg middlewares.TemplatePromptConfig) engine.Middleware {
	t.Helper()
	mw, err := middlewares.TemplatePrompt(cfg)
	require.NoError(t, err)
	return mw
}

func TestTemplatePromptFirstTurnThenReused(t *testing.T) {
	src := newMemTemplates("Conversation [prompt:conversation_id] on [prompt:model].[if git:branch] Branch [git:branch].[endif]")
	mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: src})
	tx := engine.NewTx(projector.New("c"), "r1", engine.WithModel("m1"))
	require.NoError(t, tx.Emit("test", events.UserAppended{BlockID: "u1", Text: "hi"}))

	first, second := runTwice(t, mw, tx)
	require.Len(t, first, 2, "user.appended, then the prompt")
	set, ok := first[1].Payload.(events.SystemPromptSet)
	require.True(t, ok, "got %T, want systemprompt.set", first[1].Payload)
	assert.Equal(t, middlewares.ActorTemplatePrompt, first[1].Actor)
	assert.Equal(t, "Conversation c on m1.", set.Text)
	assert.Equal(t, 0, set.Index)
	assert.Equal(t, events.Trusted, set.Trust)
	assert.Equal(t, projector.HashText(src.current), set.TemplateHash)
	assert.Equal(t, map[string]string{"prompt:conversation_id": "c", "prompt:model": "m1"}, set.Variables,
		"only the variables read and found; git:branch (no cwd) is absent")
	assert.Equal(t, map[string]string{events.MetaSystemPromptSource: middlewares.SourceTemplate, middlewares.MetaTemplateHash: set.TemplateHash}, set.Meta)
	assert.Empty(t, second, "a later turn reuses the prompt exactly")

	src.set("A new template.")
	_, third, err := run(t, mw, tx)
	require.NoError(t, err)
	assert.Empty(t, third, "editing the template changes only new conversations")
	sp, i, ok := tx.Turn().SystemPrompt()
	require.True(t, ok)
	assert.Equal(t, 0, i)
	assert.Equal(t, "Conversation c on m1.", sp.Text)
}

func TestTemplatePromptWorkingDirectory(t *testing.T) {
	fromConfig, fromData := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(fromConfig, "NOTES"), []byte("config notes"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(fromData, "NOTES"), []byte("data notes"), 0o600))
	tests := []struct {
		name string
		data map[string]string
		want string
	}{
		{name: "config without data", want: "config notes @ " + fromConfig},
		{name: "the request's cwd wins", data: map[string]string{middlewares.DataCwd: fromData}, want: "data notes @ " + fromData},
		{name: "a relative cwd is ignored", data: map[string]string{middlewares.DataCwd: "."}, want: "config notes @ " + fromConfig},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: middlewares.StaticTemplate("[file:NOTES] @ [prompt:cwd]"), Cwd: fromConfig})
			tx := txOf(t, user("u1", "hi"))
			if tc.data != nil {
				require.NoError(t, tx.Emit("test", events.DataSet{Values: tc.data}))
			}
			_, evs, err := run(t, mw, tx)
			require.NoError(t, err)
			set := evs[len(evs)-1].Payload.(events.SystemPromptSet)
			assert.Equal(t, tc.want, set.Text)
		})
	}
}

func TestTemplatePromptEmptyTemplateMeansNoPrompt(t *testing.T) {
	for _, text := range []string{"", "  \n", "[if file:missing]never[endif]"} {
		t.Run("template "+text, func(t *testing.T) {
			src := newMemTemplates(text)
			mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: src})
			tx := txOf(t, user("u1", "hi"))
			first, second := runTwice(t, mw, tx)
			require.Len(t, first, 1)
			assert.Equal(t, events.DataSet{Values: map[string]string{middlewares.DataNoSystemPrompt: projector.HashText(text)}}, first[0].Payload)
			assert.Empty(t, second)
			_, _, ok := tx.Turn().SystemPrompt()
			assert.False(t, ok, "no system block at all")

			src.set("Now there is a template.")
			_, third, err := run(t, mw, tx)
			require.NoError(t, err)
			assert.Empty(t, third, "the conversation keeps having no prompt")
		})
	}
}

func TestTemplatePromptLeavesLockedPromptAlone(t *testing.T) {
	mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: middlewares.StaticTemplate("mine")})
	tx := txOf(t, sys("s", "locked", events.MetaSystemPromptLock, "1"), user("u1", "hi"))
	_, evs, err := run(t, mw, tx)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

func TestTemplatePromptKeepsForkedPrompt(t *testing.T) {
	// A fork carries the template block: it is the conversation's prompt.
	mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: middlewares.StaticTemplate("new")})
	tx := txOf(t, sys("s", "old prompt", events.MetaSystemPromptSource, middlewares.SourceTemplate), user("u1", "hi"))
	_, evs, err := run(t, mw, tx)
	require.NoError(t, err)
	assert.Empty(t, evs)
}

func TestTemplatePromptSourceErrorIsTransient(t *testing.T) {
	src := newMemTemplates("x")
	src.err = errors.New("nats: timeout")
	mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: src})
	called, evs, err := run(t, mw, txOf(t, user("u1", "hi")))
	require.Error(t, err)
	assert.False(t, called)
	assert.Empty(t, evs)
	assert.True(t, engine.IsTransient(err), "a store that cannot be read may be readable on retry")
	assert.ErrorContains(t, err, "read the template")
}

func TestTemplatePromptConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  middlewares.TemplatePromptConfig
		want string
	}{
		{name: "no source", cfg: middlewares.TemplatePromptConfig{}, want: "Templates is nil"},
		{name: "relative cwd", cfg: middlewares.TemplatePromptConfig{Templates: middlewares.StaticTemplate(""), Cwd: "rel"}, want: "relative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middlewares.TemplatePrompt(tc.cfg)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// recorder is an Engine that keeps what each call received.
type recorder struct {
	inputs   []engine.Input
	purposes []string
	reply    string
}

func (r *recorder) Infer(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
	r.inputs = append(r.inputs, engine.Input{Turn: in.Turn.Clone(), Model: in.Model})
	r.purposes = append(r.purposes, engine.PurposeFrom(ctx))
	return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: r.reply}}}, nil
}

// compactingChain is TemplatePrompt around Compaction with a
// TemplateSummarizer, around a closure.
func compactingChain(t *testing.T, src middlewares.TemplateSource, cfg middlewares.TemplatePromptConfig, summarizer *recorder) engine.Handler {
	t.Helper()
	cfg.Templates = src
	comp, err := middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: 6, KeepLast: 2,
		Summarizer: middlewares.TemplateSummarizer{Engine: summarizer, Model: "small", Instructions: "Summarize."}})
	require.NoError(t, err)
	return templateMW(t, cfg)(comp(func(context.Context, *engine.Tx) error { return nil }))
}

// On compaction the prompt is rendered again with fresh values, from the
// current global template by default (a new template takes effect at the
// next rebuild, recorded with both hashes), or from the conversation's own
// with KeepTemplate.
func TestTemplateSummarizerRebuildsThePrompt(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("KeepTemplate=%v", keep), func(t *testing.T) {
			dir := t.TempDir()
			notes := filepath.Join(dir, "notes.txt")
			require.NoError(t, os.WriteFile(notes, []byte("alpha"), 0o600))
			clk := &clock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
			src := newMemTemplates("At [system:time]: [file:notes.txt]")
			original := src.current
			sum := &recorder{reply: "they talked"}
			h := compactingChain(t, src, middlewares.TemplatePromptConfig{Cwd: dir, Now: clk.now, KeepTemplate: keep}, sum)
			ctx := context.Background()

			tx := txOf(t, user("u1", "one"))
			require.NoError(t, h(ctx, tx))
			require.NoError(t, tx.Commit(ctx))
			sp, _, _ := tx.Turn().SystemPrompt()
			require.Equal(t, "At 2025-01-02T03:04:05Z: alpha", sp.Text)

			// Time passes, the file and the global template change, the
			// conversation grows over budget.
			clk.t = clk.t.Add(time.Hour)
			require.NoError(t, os.WriteFile(notes, []byte("beta"), 0o600))
			src.set("Another template, at [system:time].")
			for i, text := range []string{"a", "two", "b", "three", "c"} {
				p := events.Payload(events.UserAppended{BlockID: "x" + text, Text: text})
				if i%2 == 0 {
					p = events.LLMTextAppended{BlockID: "x" + text, Text: text}
				}
				require.NoError(t, tx.Emit("test", p))
			}
			require.NoError(t, tx.Commit(ctx))

			committed := len(tx.Committed())
			require.NoError(t, h(ctx, tx))
			assert.Equal(t, []events.Type{events.TypeInferenceStarted}, typesOf(tx.Committed()[committed:]),
				"the summary call is recorded before the model is asked")
			evs := tx.Pending()
			require.Equal(t, []events.Type{events.TypeInferenceFinished, events.TypeSystemPromptReplaced, events.TypeTurnCompacted}, typesOf(evs))
			rep := evs[1].Payload.(events.SystemPromptReplaced)
			want, wantHash, wantVars := "At 2025-01-02T04:04:05Z: beta", projector.HashText(original),
				map[string]string{"system:time": "2025-01-02T04:04:05Z", "file:notes.txt": "beta"}
			if !keep {
				want, wantHash, wantVars = "Another template, at 2025-01-02T04:04:05Z.", projector.HashText(src.current),
					map[string]string{"system:time": "2025-01-02T04:04:05Z"}
			}
			assert.Equal(t, want, rep.Text, "fresh values")
			assert.Equal(t, "At 2025-01-02T03:04:05Z: alpha", rep.Previous)
			assert.Equal(t, middlewares.ReasonCompaction, rep.Reason)
			assert.Equal(t, wantHash, rep.TemplateHash)
			assert.Equal(t, projector.HashText(original), rep.PreviousTemplateHash, "the replacement names both templates")
			assert.Equal(t, wantVars, rep.Variables)
			assert.Equal(t, middlewares.ActorTemplatePrompt, evs[1].Actor)

			require.Len(t, sum.inputs, 1)
			in := sum.inputs[0]
			assert.Equal(t, middlewares.PurposeCompaction, sum.purposes[0])
			assert.Equal(t, "small", in.Model)
			assert.Equal(t, want+"\n\nSummarize.", in.Turn.Blocks[0].Text, "the summarizing call gets the rebuilt prompt and the instructions")
			assert.Equal(t, events.KindSystem, in.Turn.Blocks[0].Kind)
			started := tx.Committed()[committed].Payload.(events.InferenceStarted)
			assert.Equal(t, wantHash, started.TemplateHash, "the call's instructions name their template")
			assert.Equal(t, rep.Untrusted, started.Untrusted, "and say which of their words came from variables")
			require.NotEmpty(t, started.Untrusted)
			assert.Equal(t, "system:time", started.Untrusted[0].Var)

			sp, i, _ := tx.Turn().SystemPrompt()
			assert.Equal(t, 0, i)
			assert.Equal(t, want, sp.Text, "the stored prompt has no compaction instructions")
			assert.Equal(t, wantHash, sp.Meta[middlewares.MetaTemplateHash])
			summary := tx.Turn().Blocks[1]
			assert.Equal(t, "they talked", summary.Text)
		})
	}
}

func TestTemplateSummarizerPromptGone(t *testing.T) {
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	require.NoError(t, os.WriteFile(notes, []byte("alpha"), 0o600))
	src := newMemTemplates("[file:notes.txt]")
	sum := &recorder{reply: "s"}
	h := compactingChain(t, src, middlewares.TemplatePromptConfig{Cwd: dir}, sum)
	ctx := context.Background()
	tx := txOf(t, user("u1", "one"), llm("a1", "x"), user("u2", "two"), llm("a2", "y"), user("u3", "three"))
	require.NoError(t, h(ctx, tx))
	require.NoError(t, tx.Commit(ctx))
	require.Len(t, tx.Turn().Blocks, 6, "the prompt was added, under budget")

	require.NoError(t, os.Remove(notes))
	require.NoError(t, tx.Emit("test", events.LLMTextAppended{BlockID: "a3", Text: "z"}))
	require.NoError(t, h(ctx, tx))
	assert.Equal(t, []events.Type{events.TypeInferenceFinished, events.TypeBlocksRemoved, events.TypeDataSet, events.TypeTurnCompacted}, typesOf(tx.Pending()))
	_, _, ok := tx.Turn().SystemPrompt()
	assert.False(t, ok, "the template renders to nothing: no system prompt at all")
	assert.Equal(t, "Summarize.", sum.inputs[0].Turn.Blocks[0].Text, "the instructions alone")
}

func TestTemplateSummarizerNeedsTheMiddleware(t *testing.T) {
	s := middlewares.TemplateSummarizer{Engine: &recorder{reply: "s"}}
	_, err := s.Summarize(context.Background(), txOf(t, user("u", "x")), []events.Block{user("u", "x")})
	assert.ErrorContains(t, err, "before Compaction")
}
