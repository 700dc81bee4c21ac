package check_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// TestInsertedCopiesOfOneExchange: a one-exchange history sent twice
// cannot be told from a user who asked the same again, unless the log
// says the second copy's model text was put there by a middleware
// (block.inserted), not produced by the model: then it is a copy of the
// history, reported at the first call that received it.
func TestInsertedCopiesOfOneExchange(t *testing.T) {
	tests := []struct {
		name string
		conv func() *rec
		want []got
	}{
		{name: "a middleware inserts a copy of the one exchange before the new message",
			conv: func() *rec {
				r := &rec{}
				r.prompt("s", "be brief").user("u1", "hello").call().reasoning("r1", "echo").answer("a1", "You said: hello").
					user("u2", "weather in rome")
				return r.add("acme.compact", events.BlockInserted{Index: 4, Block: events.Block{ID: "x1", Kind: events.KindUser, Text: "hello"}}).
					add("acme.compact", events.BlockInserted{Index: 5, Block: events.Block{ID: "x2", Kind: events.KindLLMText, Text: "You said: hello"}}).
					call()
			},
			want: []got{{check.RuleDuplicateBlocks, 2}},
		},
		{name: "a middleware inserts a copy of the one exchange before the history",
			conv: func() *rec {
				// The copy put after the prompt, the history it copies
				// after it: the first of the two copies is the inserted
				// one, of a model text the Turn already held.
				r := &rec{}
				r.prompt("s", "be brief").user("u1", "hello").call().reasoning("r1", "echo").answer("a1", "You said: hello").
					user("u2", "weather in rome")
				return r.add("acme.memory", events.BlockInserted{Index: 1, Block: events.Block{ID: "x1", Kind: events.KindUser, Text: "hello"}}).
					add("acme.memory", events.BlockInserted{Index: 2, Block: events.Block{ID: "x2", Kind: events.KindLLMText, Text: "You said: hello"}}).
					call()
			},
			want: []got{{check.RuleDuplicateBlocks, 2}},
		},
		{name: "a middleware's example the model then answers alike: a conversation",
			conv: func() *rec {
				// A few-shot example inserted once, before the model
				// said anything, which the user then asks and the model
				// answers as the example does: no copy of what it said.
				r := &rec{}
				r.prompt("s", "answer with a number").
					add("acme.fewshot", events.BlockInserted{Index: 1, Block: events.Block{ID: "e1", Kind: events.KindUser, Text: "2+2?"}}).
					add("acme.fewshot", events.BlockInserted{Index: 2, Block: events.Block{ID: "e2", Kind: events.KindLLMText, Text: "4"}})
				return r.user("u1", "2+2?").call().answer("a1", "4").user("u2", "thanks").call()
			},
			want: []got{},
		},
		{name: "the user asks the same again and the model answers the same: a conversation",
			conv: func() *rec {
				r := &rec{}
				return r.prompt("s", "be brief").user("u1", "hello").call().answer("a1", "You said: hello").
					user("u2", "hello").call().answer("a2", "You said: hello").user("u3", "weather in rome").call()
			},
			want: []got{},
		},
		{name: "a middleware prefills each answer and the user says the same again: a conversation",
			conv: func() *rec {
				// The same model text inserted anew before each answer
				// ("{" for JSON, as Anthropic documents a prefill): the
				// repeat holds inserted text in both copies.
				prefill := func(r *rec, id string, at int) *rec {
					return r.add("acme.prefill", events.BlockInserted{Index: at, Block: events.Block{ID: id, Kind: events.KindLLMText, Text: "{"}})
				}
				r := &rec{}
				r.prompt("s", "answer in JSON").user("u1", "more")
				prefill(r, "p1", 2).call().answer("a1", `"page": 1}`).user("u2", "more")
				prefill(r, "p2", 5).call().answer("a2", `"page": 2}`).user("u3", "more")
				return prefill(r, "p3", 8).call()
			},
			want: []got{},
		},
		{name: "a middleware inserts a reminder before each message and the user says the same again: a conversation",
			conv: func() *rec {
				// The same user-kind reminder inserted anew before each
				// user message (block.inserted's documented use): the
				// repeat [reminder, "ok"] holds inserted text in both
				// copies, put there anew for each call.
				remind := func(r *rec, id string, at int) *rec {
					return r.add("acme.reminder", events.BlockInserted{Index: at, Block: events.Block{ID: id, Kind: events.KindUser, Text: "Remember: answer kindly."}})
				}
				r := &rec{}
				r.prompt("s", "be brief")
				remind(r, "m1", 1).user("u1", "ok").call().answer("a1", "Good.")
				remind(r, "m2", 4).user("u2", "ok").call().answer("a2", "Fine.")
				return remind(r, "m3", 7).user("u3", "thanks").call()
			},
			want: []got{},
		},
		{name: "a middleware inserts its two examples again at each call: a copy",
			conv: func() *rec {
				// A few-shot middleware that puts its examples after
				// the prompt at every call, not seeing that the Turn
				// holds them since the first: at the second call the
				// model reads them twice. Inserted in both copies,
				// they are still two exchanges said twice.
				examples := func(r *rec, p string) *rec {
					for i, b := range []events.Block{{Kind: events.KindUser, Text: "2+2?"}, {Kind: events.KindLLMText, Text: "4"},
						{Kind: events.KindUser, Text: "3+3?"}, {Kind: events.KindLLMText, Text: "6"}} {
						b.ID = p + string(rune('1'+i))
						r.add("acme.fewshot", events.BlockInserted{Index: 1 + i, Block: b})
					}
					return r
				}
				r := &rec{}
				r.prompt("s", "answer with a number")
				examples(r, "e").user("u1", "4+4?").call().answer("a1", "8").user("u2", "5+5?")
				return examples(r, "f").call()
			},
			want: []got{{check.RuleDuplicateBlocks, 2}},
		},
		{name: "a middleware inserts a copy of the user's two messages: a copy",
			conv: func() *rec {
				r := &rec{}
				r.prompt("s", "be brief").user("u1", "hello").user("u2", "weather in rome").call().answer("a1", "Sunny.").user("u3", "thanks")
				return r.add("acme.compact", events.BlockInserted{Index: 5, Block: events.Block{ID: "x1", Kind: events.KindUser, Text: "hello"}}).
					add("acme.compact", events.BlockInserted{Index: 6, Block: events.Block{ID: "x2", Kind: events.KindUser, Text: "weather in rome"}}).
					call()
			},
			want: []got{{check.RuleDuplicateBlocks, 2}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, summary(tc.conv().findings(t)))
		})
	}
}

// TestInsertedCopiesPending: copies a middleware inserted after the last
// call are found in the Turn no model has received yet (Pending).
func TestInsertedCopiesPending(t *testing.T) {
	r := &rec{}
	r.prompt("s", "be brief").user("u1", "hello").call().answer("a1", "You said: hello").user("u2", "weather in rome").
		add("acme.compact", events.BlockInserted{Index: 3, Block: events.Block{ID: "x1", Kind: events.KindUser, Text: "hello"}}).
		add("acme.compact", events.BlockInserted{Index: 4, Block: events.Block{ID: "x2", Kind: events.KindLLMText, Text: "You said: hello"}})
	c := check.New()
	for _, e := range r.evs {
		_, err := c.Feed(e)
		require.NoError(t, err)
	}
	assert.Equal(t, []got{{check.RuleDuplicateBlocks, check.PendingCall}}, summary(c.Pending(len(r.evs), nil)))
}
