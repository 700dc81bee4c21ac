package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// promptLoop is a chain whose system prompt middleware keeps prompt in
// place, with ordering, compaction at 8 blocks and the reasoning guard.
func promptLoop(t *testing.T, prompt string) engine.Loop {
	t.Helper()
	sp, err := middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt), Source: "profile"})
	require.NoError(t, err)
	ord, err := middlewares.Ordering(middlewares.OrderingConfig{})
	require.NoError(t, err)
	comp, err := middlewares.Compaction(middlewares.CompactionConfig{MaxBlocks: 8, KeepLast: 3, Summarizer: middlewares.FirstWords{}})
	require.NoError(t, err)
	guard, err := middlewares.ReasoningGuard(middlewares.ReasoningGuardConfig{Repair: true})
	require.NoError(t, err)
	tools, err := engine.NewTools(scripted.WordCount())
	require.NoError(t, err)
	return engine.Loop{Handler: engine.Chain(scripted.New(nil), sp, ord, comp, guard), Tools: tools}
}

// want is the active prompt every model call of a request must show.
type want struct {
	id, text     string
	setAt        int
	setBy        events.Type
	replacedAt   int
	replacements int
	locked       bool
	lockedAt     int
}

func TestTimelineShowsTheActivePromptAtEveryInference(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	c := newConvo(t, l, "prompts")
	expect := map[string]want{} // by request ID
	spID := func() string {
		sp, _, ok := c.turn.SystemPrompt()
		require.True(t, ok)
		return sp.ID
	}

	// 1. The middleware sets the prompt: event 1 is the user's message,
	// event 2 the systemprompt.set.
	r := c.request(promptLoop(t, "You are P1."), "hello", nil)
	first := spID()
	expect[r] = want{id: first, text: "You are P1.", setAt: 2, setBy: events.TypeSystemPromptSet}

	// 2. Another profile replaces it; this request calls a tool, so two
	// model calls see the replacement.
	before := c.turn.Events
	r = c.request(promptLoop(t, "You are P2."), "count the words in a b c", nil)
	replaced := before + 2 // after the user's message
	expect[r] = want{id: first, text: "You are P2.", setAt: 2, setBy: events.TypeSystemPromptSet, replacedAt: replaced, replacements: 1}

	// 3. An operator locks it: a third profile cannot replace it.
	locked := c.operator("operator", events.BlockAnnotated{BlockID: first, Meta: map[string]string{events.MetaSystemPromptLock: "operator"}})
	r = c.request(promptLoop(t, "You are P3."), "still there?", nil)
	p2Locked := want{id: first, text: "You are P2.", setAt: 2, setBy: events.TypeSystemPromptSet, replacedAt: replaced, replacements: 1,
		locked: true, lockedAt: locked}
	expect[r] = p2Locked

	// 4. An operator puts another system block in front, locked so the
	// middleware leaves it: it is the active prompt now. Context in section user_context makes the ordering
	// middleware reorder.
	front := c.operator("operator",
		events.SystemPromptSet{BlockID: "op-prompt", Text: "Operator prompt.", Index: 0, Trust: events.Trusted,
			Meta: map[string]string{events.MetaSystemPromptSource: "operator", events.MetaSystemPromptLock: "operator"}},
		events.UserAppended{BlockID: "ctx", Text: "user profile: likes tea", Meta: map[string]string{events.MetaSection: "user_context"}})
	r = c.request(promptLoop(t, "You are P3."), "and now?", nil)
	expect[r] = want{id: "op-prompt", text: "Operator prompt.", setAt: front, setBy: events.TypeSystemPromptSet, locked: true, lockedAt: front}

	// 5. A reorder puts the locked prompt first again; the Turn is over 8
	// blocks by now, so compaction runs too.
	order := []string{first}
	for _, b := range c.turn.Blocks {
		if b.ID != first {
			order = append(order, b.ID)
		}
	}
	c.operator("operator", events.BlocksReordered{Order: order, Reason: "test: locked prompt first"})
	r = c.request(promptLoop(t, "You are P3."), "count the words in one two", nil)
	expect[r] = p2Locked

	tl, err := replay.Timeline(ctx, l, "prompts")
	require.NoError(t, err)
	require.Equal(t, c.turn.Events, len(tl.Events))
	seen := map[events.Type]bool{}
	byRequest := map[string]int{}
	for i, e := range tl.Events {
		assert.Equal(t, i+1, e.N)
		assert.NotEmpty(t, e.Summary)
		seen[e.Type] = true
		if e.Inference == nil {
			continue
		}
		byRequest[e.Cause]++
		inf := e.Inference
		assert.True(t, inf.Verified, "model call #%d is proven by the log", inf.Index)
		require.NotNil(t, inf.Turn)
		assert.Equal(t, inf.InputHash, projector.Hash(inf.Turn))
		at, err := l.LoadAt(ctx, "prompts", e.N-1)
		require.NoError(t, err)
		assert.Equal(t, projector.Hash(at), projector.Hash(inf.Turn), "the Turn of model call #%d is the log's Turn before it", inf.Index)

		w, ok := expect[e.Cause]
		require.True(t, ok, "model call #%d belongs to a request of the test", inf.Index)
		sp := inf.SystemPrompt
		require.NotNil(t, sp, "model call #%d", inf.Index)
		assert.Equal(t, w.id, sp.ID, "model call #%d: prompt", inf.Index)
		assert.Equal(t, w.text, sp.Text, "model call #%d: text", inf.Index)
		assert.Equal(t, projector.HashText(w.text), sp.Hash)
		assert.Equal(t, w.setAt, sp.SetAt, "model call #%d: set at", inf.Index)
		assert.Equal(t, w.setBy, sp.SetBy, "model call #%d: set by", inf.Index)
		assert.Equal(t, w.replacedAt, sp.ReplacedAt, "model call #%d: replaced at", inf.Index)
		assert.Equal(t, w.replacements, sp.Replacements, "model call #%d: replacements", inf.Index)
		assert.Equal(t, w.locked, sp.Locked, "model call #%d: locked", inf.Index)
		assert.Equal(t, w.lockedAt, sp.LockedAt, "model call #%d: locked at", inf.Index)
		assert.Equal(t, 0, sp.Index, "the active prompt is the first system block")
	}
	assert.Equal(t, 7, tl.Inferences)
	for r := range expect {
		assert.Positive(t, byRequest[r], "request %s made a model call", r)
	}
	for _, typ := range []events.Type{events.TypeSystemPromptSet, events.TypeSystemPromptReplaced, events.TypeBlockAnnotated,
		events.TypeBlocksReordered, events.TypeTurnCompacted, events.TypeToolCalled, events.TypeToolResult,
		events.TypeInferenceStarted, events.TypeInferenceFinished, events.TypeRequestCompleted} {
		assert.True(t, seen[typ], "the conversation went through %s", typ)
	}

	t.Run("verify agrees, through replacements, locks, reorders and compactions", func(t *testing.T) {
		// Under -race this also proves the hashers never read blocks the
		// fold changes in place.
		v, err := replay.Verify(ctx, l, "prompts")
		require.NoError(t, err)
		assert.True(t, v.OK(), "%+v", v.Mismatches)
		assert.Equal(t, tl.Inferences, v.Inferences)
	})
	t.Run("text", func(t *testing.T) {
		var out bytes.Buffer
		require.NoError(t, tl.WriteText(&out))
		s := out.String()
		assert.True(t, strings.HasPrefix(s, "conversation prompts\n"))
		assert.True(t, strings.HasSuffix(s, fmt.Sprintf("%d events, 7 model calls\n", len(tl.Events))))
		assert.Contains(t, s, "model call #1 (event 3)")
		assert.Contains(t, s, "set at event 2 by systemprompt.set")
		assert.Contains(t, s, "locked at event")
		assert.Contains(t, s, "  | Operator prompt.")
		assert.Contains(t, s, `section="user_context"`)
		assert.NotContains(t, s, "NOT VERIFIED")
	})
	t.Run("json", func(t *testing.T) {
		data, err := json.Marshal(tl)
		require.NoError(t, err)
		var doc struct {
			Conversation string `json:"conversation"`
			Inferences   int    `json:"inferences"`
			Events       []struct {
				N         int             `json:"n"`
				Type      string          `json:"type"`
				Payload   json.RawMessage `json:"payload"`
				Inference *struct {
					Index        int `json:"index"`
					SystemPrompt struct {
						ID    string `json:"id"`
						SetAt int    `json:"set_at"`
					} `json:"system_prompt"`
					Turn struct {
						Blocks []events.Block `json:"blocks"`
					} `json:"turn"`
				} `json:"inference"`
			} `json:"events"`
		}
		require.NoError(t, json.Unmarshal(data, &doc))
		assert.Equal(t, "prompts", doc.Conversation)
		assert.Equal(t, 7, doc.Inferences)
		assert.Equal(t, "user.appended", doc.Events[0].Type)
		assert.Contains(t, string(doc.Events[0].Payload), `"text":"hello"`)
		require.NotNil(t, doc.Events[2].Inference)
		assert.Equal(t, first, doc.Events[2].Inference.SystemPrompt.ID)
		assert.Equal(t, 2, doc.Events[2].Inference.SystemPrompt.SetAt)
		assert.Len(t, doc.Events[2].Inference.Turn.Blocks, 2)
	})
	t.Run("streamed JSON is the History's JSON", func(t *testing.T) {
		var streamed bytes.Buffer
		require.NoError(t, replay.WriteTimelineJSON(&streamed, "prompts", replay.Entries(ctx, l, "prompts")))
		whole, err := json.Marshal(tl)
		require.NoError(t, err)
		var a, b any
		require.NoError(t, json.Unmarshal(streamed.Bytes(), &a))
		require.NoError(t, json.Unmarshal(whole, &b))
		assert.Equal(t, b, a)
	})
	t.Run("streaming stops when asked", func(t *testing.T) {
		n := 0
		for _, err := range replay.Entries(ctx, l, "prompts") {
			require.NoError(t, err)
			if n++; n == 3 {
				break
			}
		}
		assert.Equal(t, 3, n)
	})
	t.Run("only some turns", func(t *testing.T) {
		tl, err := replay.Timeline(ctx, l, "prompts", replay.WithTurns(func(i int) bool { return i == 3 }))
		require.NoError(t, err)
		for _, e := range tl.Events {
			if e.Inference != nil {
				assert.Equal(t, e.Inference.Index == 3, e.Inference.Turn != nil)
			}
		}
	})
}

func TestAt(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	_, loop := defaultLoop(t)
	c := newConvo(t, l, "at")
	c.request(loop, "hello", map[string]string{"tz": "UTC"})
	c.request(loop, "count the words in a b", nil)
	total := c.turn.Events

	for n := 0; n <= total; n++ {
		pt, err := replay.At(ctx, l, "at", n)
		require.NoError(t, err)
		want, err := l.LoadAt(ctx, "at", n)
		require.NoError(t, err)
		assert.Equal(t, projector.Hash(want), projector.Hash(pt.Turn), "@%d", n)
		assert.Equal(t, n, pt.Turn.Events)
		assert.Equal(t, total, pt.Events)
		if sp, _, ok := want.SystemPrompt(); ok {
			require.NotNil(t, pt.SystemPrompt)
			assert.Equal(t, sp.ID, pt.SystemPrompt.ID)
			assert.NotEmpty(t, pt.SystemPrompt.Source, "the default profile's prompt says where it came from")
		} else {
			assert.Nil(t, pt.SystemPrompt)
		}
	}
	_, err := replay.At(ctx, l, "at", total+1)
	assert.ErrorIs(t, err, eventlog.ErrNotFound)
	assert.Contains(t, err.Error(), "use an n from 0 to")
	_, err = replay.At(ctx, l, "nobody", 1)
	assert.ErrorIs(t, err, replay.ErrNoEvents)
	_, err = replay.Timeline(ctx, l, "bad.id")
	assert.ErrorIs(t, err, events.ErrInvalidConversationID)

	var out bytes.Buffer
	pt, err := replay.At(ctx, l, "at", 3)
	require.NoError(t, err)
	require.NoError(t, pt.WriteText(&out))
	assert.Contains(t, out.String(), "at@3 (of ")
	assert.Contains(t, out.String(), "system prompt ")
}

// TestTimelineHeaderNamesEveryColumn: the text timeline's rows have a
// "stored by" column (the role), but its header left it out, so that
// "cause:step" stood above the role and every title after it was one
// column off (found by an adopter probe). Each title starts where its
// column does.
func TestTimelineHeaderNamesEveryColumn(t *testing.T) {
	e := &replay.Entry{N: 1, Seq: 7, Time: time.Date(2026, 11, 28, 16, 0, 0, 0, time.UTC), Type: events.TypeUserAppended,
		Actor: "worker", Writer: "admin", Cause: "req-1", Step: 0, Summary: "user u1 \"hi\""}
	var text bytes.Buffer
	require.NoError(t, replay.WriteTimeline(&text, "c", func(yield func(*replay.Entry, error) bool) { yield(e, nil) }))
	lines := strings.Split(text.String(), "\n")
	require.GreaterOrEqual(t, len(lines), 3, text.String())
	header, row := lines[1], lines[2]
	for title, value := range map[string]string{"type": "user.appended", "actor": "worker", "by": "admin", "cause:step": "req-1:0"} {
		at := strings.Index(header, " "+title+" ")
		require.GreaterOrEqual(t, at, 0, "the header names %q: %q", title, header)
		assert.Equal(t, value, row[at+1:at+1+len(value)], "%q heads its column\n%s\n%s", title, header, row)
	}
}
