package cli

import (
	"context"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// libraryApp is a chat backend a Go team records through the library: its
// own system-prompt and ordering middlewares, its own fake model, a tool
// loop. buggy selects the variant whose system-prompt middleware appends
// a second prompt on the second request and whose ordering middleware
// sends reasoning to the end of the Turn after a tool result.
type libraryApp struct {
	buggy    bool
	requests int
}

const appPrompt = "You are the calculator desk."

// promptMW sets the prompt when the conversation has none; the buggy one
// also appends it again on the second request.
func (a *libraryApp) promptMW(next engine.Handler) engine.Handler {
	return func(ctx context.Context, tx *engine.Tx) error {
		t := tx.Turn()
		if _, _, ok := t.SystemPrompt(); !ok {
			if err := tx.Emit("app.prompt", events.SystemPromptSet{BlockID: engine.NewID(), Text: appPrompt, Trust: events.Trusted}); err != nil {
				return err
			}
		} else if a.buggy && a.requests == 2 && countKind(t.Blocks, events.KindSystem) == 1 {
			if err := tx.Emit("app.prompt", events.SystemPromptSet{BlockID: engine.NewID(), Text: appPrompt + " Be brief.",
				Index: len(t.Blocks), Trust: events.Trusted}); err != nil {
				return err
			}
		}
		return next(ctx, tx)
	}
}

// orderMW keeps system blocks first; the buggy one also puts reasoning
// last when the Turn ends with a tool result, so that "the model sees the
// results right after the question".
func (a *libraryApp) orderMW(next engine.Handler) engine.Handler {
	return func(ctx context.Context, tx *engine.Tx) error {
		bs := tx.Turn().Blocks
		order := make([]string, 0, len(bs))
		rank := func(b events.Block) int {
			switch {
			case b.Kind == events.KindSystem:
				return 0
			case a.buggy && b.Kind == events.KindReasoning && bs[len(bs)-1].Kind == events.KindToolResult:
				return 2
			}
			return 1
		}
		sorted := slices.Clone(bs)
		slices.SortStableFunc(sorted, func(x, y events.Block) int { return rank(x) - rank(y) })
		for _, b := range sorted {
			order = append(order, b.ID)
		}
		if !slices.Equal(order, blockIDs(bs)) {
			if err := tx.Emit("app.order", events.BlocksReordered{Order: order}); err != nil {
				return err
			}
		}
		return next(ctx, tx)
	}
}

func blockIDs(bs []events.Block) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = b.ID
	}
	return out
}

func countKind(bs []events.Block, k events.Kind) int {
	n := 0
	for _, b := range bs {
		if b.Kind == k {
			n++
		}
	}
	return n
}

// model thinks, then calls the calculator for a question with '*' in it,
// and answers with the tool's result once it has it.
var model = engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
	bs := in.Turn.Blocks
	var q events.Block
	var result string
	for _, b := range bs {
		switch b.Kind {
		case events.KindUser:
			q, result = b, ""
		case events.KindToolResult:
			result = b.Text
		}
	}
	switch {
	case result != "":
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "It is " + result + "."}}}, nil
	case strings.Contains(q.Text, "*"):
		return engine.Output{Blocks: []events.Block{{Kind: events.KindReasoning, Text: "I should use the calculator"},
			{Kind: events.KindToolCall, CallID: "call-" + engine.NewID(), ToolName: "multiply", Arguments: `{"a":6,"b":7}`}}}, nil
	}
	return engine.Output{Blocks: []events.Block{{Kind: events.KindReasoning, Text: "a courtesy"}, {Kind: events.KindLLMText, Text: "You are welcome."}}}, nil
})

// record runs the app's requests on conv, as the library records them.
func (a *libraryApp) record(t *testing.T, e *auditEnv, conv string, questions ...string) {
	t.Helper()
	tools, err := engine.NewTools(engine.Tool{Spec: engine.ToolSpec{Name: "multiply", Description: "a times b"}, Func: func(_ context.Context, args json.RawMessage) (string, error) {
		var in struct{ A, B int }
		if err := json.Unmarshal(args, &in); err != nil {
			return "", err
		}
		return strconv.Itoa(in.A * in.B), nil
	}})
	require.NoError(t, err)
	ctx := context.Background()
	for _, q := range questions {
		a.requests++
		turn, err := e.log.Load(ctx, conv)
		require.NoError(t, err)
		tx := engine.NewTx(turn, ulid.Make().String(), engine.WithLog(e.log), engine.WithModel("fake-1"), engine.WithTools(tools.Specs()...))
		require.NoError(t, tx.Emit("app", events.UserAppended{BlockID: engine.NewID(), Text: q}))
		require.NoError(t, engine.Loop{Handler: engine.Chain(model, a.promptMW, a.orderMW), Tools: tools}.Run(ctx, tx))
		require.NoError(t, tx.Commit(ctx))
	}
}

// checkDoc is the JSON of `turnlog replay --check -o json`.
type checkDoc struct {
	Conversation string `json:"conversation"`
	Calls        int    `json:"calls"`
	Findings     []struct {
		Call   int      `json:"call"`
		N      int      `json:"n"`
		Rule   string   `json:"rule"`
		Detail string   `json:"detail"`
		Blocks []string `json:"blocks"`
	} `json:"findings"`
}

// TestReplayCheckFindsTheLibraryAppsBugs is issue 25's report: the buggy
// variant's second system prompt and its reasoning sent away from its
// follower are reported at the model calls that received them, although
// `--verify` passes and the latest Turn shows no violation; the correct
// variant passes.
func TestReplayCheckFindsTheLibraryAppsBugs(t *testing.T) {
	e := newAuditEnv(t, false)
	questions := []string{"what is 6*7?", "thanks"}
	(&libraryApp{buggy: true}).record(t, e, "buggy", questions...)
	(&libraryApp{}).record(t, e, "fixed", questions...)

	_, errOut, code := e.run("", "replay", "--verify", "buggy")
	require.Equal(t, 0, code, "the log matches what the model received: %s", errOut)
	latest, err := e.log.Load(context.Background(), "buggy")
	require.NoError(t, err)
	assert.Empty(t, replay.Diff(latest, latest).Violations, "on the latest Turn the reasoning is followed again")

	out, errOut, code := e.run("", "replay", "--check", "-o", "json", "buggy")
	require.Equal(t, 1, code, "findings exit 1: %s", errOut)
	var doc checkDoc
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, "buggy", doc.Conversation)
	assert.Equal(t, 3, doc.Calls, "6*7: a call, the tool, a call; thanks: a call")
	at := map[string][]int{}
	for _, f := range doc.Findings {
		at[f.Rule] = append(at[f.Rule], f.Call)
		assert.NotEmpty(t, f.Blocks, f.Rule)
		assert.Positive(t, f.N)
	}
	assert.Equal(t, []int{2}, at["reasoning_without_follower"], "call 2 received the reasoning last: %s", out)
	assert.Equal(t, []int{3}, at["duplicate_system_prompt"], "call 3 (the second request) received two prompts: %s", out)

	text, _, code := e.run("", "replay", "--check", "buggy")
	assert.Equal(t, 1, code)
	assert.Contains(t, text, "model call #2 (event ")
	assert.Contains(t, text, ": reasoning_without_follower\n")
	assert.Contains(t, text, "model call #3 (event ")
	assert.Contains(t, text, ": duplicate_system_prompt\n")

	out, errOut, code = e.run("", "replay", "--check", "-o", "json", "fixed")
	require.Equal(t, 0, code, "the correct variant passes: %s %s", out, errOut)
	doc = checkDoc{}
	require.NoError(t, json.Unmarshal([]byte(out), &doc), out)
	assert.Equal(t, 3, doc.Calls)
	assert.NotNil(t, doc.Findings)
	assert.Empty(t, doc.Findings)
	text, _, code = e.run("", "replay", "--check", "fixed")
	assert.Equal(t, 0, code)
	assert.Equal(t, "fixed: 3 model calls checked, no findings\n", text)

	_, errOut, code = e.run("", "replay", "--check", "nosuch")
	assert.Equal(t, 2, code, "an error exits 2: %s", errOut)

	// ls shows which conversation has findings, and how many.
	byID := map[string]replay.Conversation{}
	for _, c := range e.ls().Conversations {
		byID[c.ID] = c
	}
	assert.Equal(t, len(doc.Findings), byID["fixed"].Findings)
	var buggy checkDoc
	out, _, _ = e.run("", "replay", "--check", "-o", "json", "buggy")
	require.NoError(t, json.Unmarshal([]byte(out), &buggy))
	assert.Equal(t, len(buggy.Findings), byID["buggy"].Findings)
	table, _, code := e.run("", "ls")
	require.Equal(t, 0, code)
	assert.Regexp(t, `(?m)^buggy .*\b`+strconv.Itoa(len(buggy.Findings))+` \(replay --check\)`, table)
	assert.Regexp(t, `(?m)^fixed .* - +ok  `, table)
}

// TestReplayCheckPassesTheDefaultProfile: conversations the workers answer
// with the default profile (template prompt, ordering, reasoning guard,
// compaction, tools) keep every rule.
func TestReplayCheckPassesTheDefaultProfile(t *testing.T) {
	e := newAuditEnv(t, true)
	for _, q := range []string{"hello", "count the words in one two three", "thanks", "count the words in a b", "bye"} {
		e.ask("plain", q)
	}
	out, errOut, code := e.run("", "replay", "--check", "plain")
	assert.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Regexp(t, `^plain: \d+ model calls checked, no findings\n$`, out)
}
