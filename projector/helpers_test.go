package projector_test

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// conv is the conversation every test event belongs to.
const conv = "conv-1"

// ev wraps a payload in a valid event of conv.
func ev(p events.Payload) events.Event {
	return events.New(conv, "req-1", 0, "test", p)
}

// state is everything a Turn exposes, deep-copied without Turn.Clone (which
// is under test too), so a test can compare a Turn before and after.
type state struct {
	Conversation string
	Blocks       []projector.Block
	Data         map[string]string
	Events       int
	Seq          uint64
}

func stateOf(t *projector.Turn) state {
	s := state{Conversation: t.Conversation, Events: t.Events, Seq: t.Seq, Data: maps.Clone(t.Data)}
	if t.Blocks != nil {
		s.Blocks = make([]projector.Block, len(t.Blocks))
		for i, b := range t.Blocks {
			b.Meta = maps.Clone(b.Meta)
			s.Blocks[i] = b
		}
	}
	return s
}

// assertSameTurn checks that two Turns expose the same content and
// position. It ignores the unexported lookup index, which is a cache.
func assertSameTurn(t *testing.T, want, got *projector.Turn, msgAndArgs ...any) bool {
	t.Helper()
	return assert.Equal(t, stateOf(want), stateOf(got), msgAndArgs...)
}

// build folds payloads into a new Turn of conv and fails the test on the
// first error.
func build(t testing.TB, ps ...events.Payload) *projector.Turn {
	t.Helper()
	turn := projector.New(conv)
	for i, p := range ps {
		require.NoError(t, projector.Apply(turn, ev(p)), "payload %d (%s)", i, p.EventType())
	}
	return turn
}

// ids lists the IDs of the Turn's blocks in order.
func ids(turn *projector.Turn) []string {
	out := make([]string, len(turn.Blocks))
	for i, b := range turn.Blocks {
		out[i] = b.ID
	}
	return out
}

// base is a Turn with one block of every kind, a system prompt at the
// front and data, after seven events: the starting point of most tests.
//
//	s1 system "be brief" (trusted, source=global)
//	u1 user "hello"
//	r1 reasoning
//	t1 tool_call c1
//	t2 tool_result c1
//	l1 llm_text "done"
func base(t testing.TB) *projector.Turn {
	t.Helper()
	return build(t,
		events.UserAppended{BlockID: "u1", Text: "hello", Meta: map[string]string{events.MetaSection: "conversation"}},
		events.SystemPromptSet{BlockID: "s1", Text: "be brief", Trust: events.Trusted, Meta: map[string]string{events.MetaSystemPromptSource: "global"}},
		events.ReasoningAppended{BlockID: "r1", Text: "hmm", Encrypted: "enc"},
		events.ToolCalled{BlockID: "t1", CallID: "c1", Name: "lookup", Arguments: `{"q":1}`},
		events.ToolResult{BlockID: "t2", CallID: "c1", Text: "42"},
		events.LLMTextAppended{BlockID: "l1", Text: "done"},
		events.DataSet{Values: map[string]string{"tz": "UTC", "page": "/"}},
	)
}
