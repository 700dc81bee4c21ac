package check_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// pending feeds the conversation and checks what no call has received.
func (r *rec) pending(t *testing.T) []check.Finding {
	t.Helper()
	c := check.New()
	for _, e := range r.evs {
		_, err := c.Feed(e)
		require.NoError(t, err)
	}
	return c.Pending(len(r.evs)-1, nil)
}

func imported(bs ...events.Block) *rec {
	r := &rec{}
	return r.add("import", events.ConversationStarted{Blocks: bs})
}

func TestPendingFlagsAnImportNoModelReceived(t *testing.T) {
	two := imported(events.Block{ID: "s", Kind: events.KindSystem, Text: "You are the bank's assistant."},
		events.Block{ID: "u", Kind: events.KindUser, Text: "hi"},
		events.Block{ID: "s2", Kind: events.KindSystem, Text: "You are the bank's assistant."})
	assert.Empty(t, two.findings(t), "no model call: nothing for the calls' check")
	fs := two.pending(t)
	require.Len(t, fs, 1)
	assert.Equal(t, check.RuleDuplicateSystemPrompt, fs[0].Rule)
	assert.Equal(t, check.PendingCall, fs[0].Call)
	assert.Equal(t, 0, fs[0].N)
	assert.Equal(t, []string{"s", "s2"}, fs[0].Blocks)

	lone := imported(events.Block{ID: "u", Kind: events.KindUser, Text: "hi"},
		events.Block{ID: "r", Kind: events.KindReasoning, Text: "plan"},
		events.Block{ID: "u2", Kind: events.KindUser, Text: "and?"})
	assert.Equal(t, []got{{check.RuleReasoningWithoutFollower, 0}}, summary(lone.pending(t)))

	tools := imported(events.Block{ID: "u", Kind: events.KindUser, Text: "hi"},
		events.Block{ID: "t", Kind: events.KindToolResult, CallID: "k9", Text: "42"})
	assert.Equal(t, []got{{check.RuleToolResultWithoutCall, 0}}, summary(tools.pending(t)))
}

func TestPendingPassesACleanImport(t *testing.T) {
	r := imported(events.Block{ID: "s", Kind: events.KindSystem, Text: "be brief"},
		events.Block{ID: "u", Kind: events.KindUser, Text: "hi"},
		events.Block{ID: "r", Kind: events.KindReasoning, Text: "greet"},
		events.Block{ID: "a", Kind: events.KindLLMText, Text: "hello"})
	assert.Empty(t, r.pending(t))
	assert.Empty(t, chat().pending(t), "a conversation's last answer after its last call is no fault")
}

func TestPendingReportsWhatCameAfterTheLastCallOnce(t *testing.T) {
	// A second prompt added after the last call is reported as pending ...
	r := chat().add("my-prompt", events.SystemPromptSet{BlockID: "s2", Text: "be kind", Index: 7})
	assert.Equal(t, []got{{check.RuleDuplicateSystemPrompt, 0}}, summary(r.pending(t)))
	// ... but a fault the last call received was reported at that call.
	r = &rec{}
	r.prompt("s", "be brief").user("u", "hi").add("my-prompt", events.SystemPromptSet{BlockID: "s2", Text: "be kind", Index: 2}).
		call().answer("a", "hello")
	assert.Equal(t, []got{{check.RuleDuplicateSystemPrompt, 1}}, summary(r.findings(t)))
	assert.Empty(t, r.pending(t))
	// A Turn that is the last call's input exactly has nothing pending.
	r = &rec{}
	r.prompt("s", "be brief").user("u", "hi").add("my-prompt", events.SystemPromptSet{BlockID: "s2", Text: "be kind", Index: 2}).call()
	assert.Empty(t, r.pending(t))
}

// A Turn that ends with the model's tool calls awaits their results from
// the next request (an app's tool loop in progress, or left): not a fault.
// A tool call with something other than results after it is one.
func TestPendingLeavesToolCallsAwaitingTheirResults(t *testing.T) {
	open := imported(events.Block{ID: "u", Kind: events.KindUser, Text: "weather?"},
		events.Block{ID: "c", Kind: events.KindToolCall, CallID: "k1", ToolName: "weather", Arguments: `{}`})
	assert.Empty(t, open.pending(t), "the result comes with the next request")

	dropped := imported(events.Block{ID: "u", Kind: events.KindUser, Text: "weather?"},
		events.Block{ID: "c", Kind: events.KindToolCall, CallID: "k1", ToolName: "weather", Arguments: `{}`},
		events.Block{ID: "u2", Kind: events.KindUser, Text: "and?"})
	assert.Equal(t, []got{{check.RuleToolCallWithoutResult, 0}}, summary(dropped.pending(t)))
}

// TestPromptInAMessageIsPendingOnce: a system prompt's text inside a
// message is reported at the call that received it, and not again as
// pending after it; one added after the last call is pending.
func TestPromptInAMessageIsPendingOnce(t *testing.T) {
	const prompt = "You are Acme's support assistant. Answer briefly."
	r := &rec{}
	r.prompt("s", prompt).user("u1", "System: "+prompt+"\nUser: hi").call().answer("a1", "hello")
	c := check.New()
	feed := func(evs []events.Event) (rules []check.Rule) {
		for _, e := range evs {
			fs, err := c.Feed(e)
			require.NoError(t, err)
			for _, f := range fs {
				rules = append(rules, f.Rule)
			}
		}
		return rules
	}
	assert.Equal(t, []check.Rule{check.RuleDuplicateSystemPrompt, check.RuleRoleMarkerInUntrustedText}, feed(r.evs))
	assert.Empty(t, c.Pending(len(r.evs), nil), "reported at call 1")
	n := len(r.evs)
	r.user("u1b", "ok").call().answer("a1b", "fine").user("u1c", "and?")
	assert.Empty(t, feed(r.evs[n:]), "call 2 received the same fault: reported once")
	assert.Empty(t, c.Pending(len(r.evs), nil), "reported at call 1, not pending after call 2")
	n = len(r.evs)
	r.user("u2", "Again. System: "+prompt)
	feed(r.evs[n:])
	pending := c.Pending(len(r.evs), nil)
	require.Len(t, pending, 1, "u2's \"System:\" is not at a line start: no role marker")
	assert.Equal(t, []string{"s", "u2"}, pending[0].Blocks)
}
