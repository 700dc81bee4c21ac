package check_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// TestFeedOneCallAtATime checks as a gateway does: events fed as they are
// recorded, the findings of each call returned at its inference.started.
// A fault the next input still carries is not reported again; one that is
// repaired and comes back is.
func TestFeedOneCallAtATime(t *testing.T) {
	r := &rec{}
	r.prompt("s", "be brief").user("u1", "hi").call().answer("a1", "hello").
		user("u2", "again").add("my-prompt", events.SystemPromptSet{BlockID: "s2", Text: "be brief", Index: 4}).call().
		answer("a2", "hello again").user("u3", "and?").call().
		add("fixer", events.BlocksRemoved{BlockIDs: []string{"s2"}, Reason: "fix"}).user("u4", "ok").call().
		add("my-prompt", events.SystemPromptSet{BlockID: "s3", Text: "be brief", Index: 7}).call()
	c := check.New()
	perCall := map[int][]check.Rule{}
	details := map[int]string{}
	for i, e := range r.evs {
		fs, err := c.Feed(e)
		require.NoError(t, err)
		for _, f := range fs {
			assert.Equal(t, i+1, f.N)
			perCall[f.Call] = append(perCall[f.Call], f.Rule)
			details[f.Call] = f.Detail
		}
	}
	assert.Equal(t, map[int][]check.Rule{
		2: {check.RuleDuplicateSystemPrompt}, // a second prompt, of the same text: one fault, one finding
		4: {check.RuleHistoryRewritten},      // s2 removed by no allowed actor
		5: {check.RuleDuplicateSystemPrompt},
	}, perCall)
	assert.Equal(t, `system s at index 0 (set by "systemprompt.template") is the system prompt, and system s2 at index 4 (set by "my-prompt") acts as one too; system s2 at index 4 has the same text as system s at index 0 (8 bytes)`, details[2])
	assert.Equal(t, 5, c.Calls())
}

// TestSecondPromptInFrontIsNamed: a middleware that sets a second system
// prompt in front of the first (SystemPromptSet's index 0) made it the
// system prompt by position, and the finding named only the block after
// it and its setter, the innocent one: who set each is said.
func TestSecondPromptInFrontIsNamed(t *testing.T) {
	r := &rec{}
	r.prompt("s", "You are Acme's assistant.").add("acme.bad", events.SystemPromptSet{BlockID: "x", Text: "Second prompt.", Trust: events.Trusted}).
		user("u", "hi").call()
	fs := r.findings(t)
	require.Len(t, fs, 1)
	assert.Equal(t, check.RuleDuplicateSystemPrompt, fs[0].Rule)
	assert.Equal(t, `system x at index 0 (set by "acme.bad") is the system prompt, and system s at index 1 (set by "systemprompt.template") acts as one too`, fs[0].Detail)
}

// TestAsideCalls: a call whose input was built from part of the Turn (a
// compaction's summary) counts as a call, is checked on the input the
// caller rebuilds, and is no "previous call" for the next one.
func TestAsideCalls(t *testing.T) {
	r := &rec{}
	r.prompt("s", "be brief").user("u1", "hi").call().answer("a1", "hello").user("u2", "more").
		add("compaction", events.InferenceStarted{InferenceID: "sum", Model: "m", InputHash: "h", Purpose: "compaction",
			Instructions: "summarise", InputBlocks: []string{"u1", "a1"}}).
		add("compaction", events.TurnCompacted{Removed: []string{"u1", "a1"}, Summary: &events.Block{ID: "x", Kind: events.KindOther, Text: "hi, hello"}}).
		call()
	fs, calls, err := check.Conversation(r.evs)
	require.NoError(t, err)
	assert.Equal(t, 3, calls, "the summariser's call is numbered as replay --inference numbers it")
	assert.Empty(t, fs)

	rebuilt := 0
	fs, _, err = check.Conversation(r.evs, check.WithAsideInput(func(turn *projector.Turn, p events.InferenceStarted) (*projector.Turn, error) {
		rebuilt++
		assert.Equal(t, "summarise", p.Instructions)
		return &projector.Turn{Blocks: []events.Block{
			{ID: "i", Kind: events.KindSystem, Text: p.Instructions}, {ID: "j", Kind: events.KindSystem, Text: p.Instructions}}}, nil
	}))
	require.NoError(t, err)
	assert.Equal(t, 1, rebuilt)
	assert.Equal(t, []got{{check.RuleDuplicateSystemPrompt, 2}}, summary(fs))
}

// TestEachChangeIsReported: the rules that compare a call's input with the
// previous call's report a change at every call that makes one, on the
// same block too (the prompt's text A, then B, then C): a change is not a
// fault the input "still carries". A fault state stays reported once.
func TestEachChangeIsReported(t *testing.T) {
	r := &rec{}
	r.prompt("s", "A").user("u1", "hi").call().answer("a1", "hello").
		user("u2", "more").add("clock", events.SystemPromptReplaced{BlockID: "s", Text: "B", Previous: "A"}).call().answer("a2", "ok").
		user("u3", "more").add("clock", events.SystemPromptReplaced{BlockID: "s", Text: "C", Previous: "B"}).call().answer("a3", "ok").
		user("u4", "more").call().answer("a4", "ok").
		user("u5", "more").add("mover", events.BlocksReordered{Order: []string{"s", "a1", "u1", "u2", "a2", "u3", "a3", "u4", "a4", "u5"}}).call().answer("a5", "ok").
		user("u6", "more").add("mover", events.BlocksReordered{Order: []string{"s", "u1", "a1", "u2", "a2", "u3", "a3", "u4", "a4", "u5", "a5", "u6"}}).call()
	var fs []got
	for _, f := range r.findings(t) {
		fs = append(fs, got{f.Rule, f.Call})
	}
	assert.Equal(t, []got{{check.RuleSystemPromptChanged, 2}, {check.RuleSystemPromptChanged, 3},
		{check.RuleHistoryRewritten, 5}, {check.RuleHistoryRewritten, 6}}, fs)
}
