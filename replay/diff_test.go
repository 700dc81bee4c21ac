package replay_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
	"pgregory.net/rapid"
)

func blk(id string, kind events.Kind, text string) events.Block {
	return events.Block{ID: id, Kind: kind, Text: text}
}

func sys(id, text string) events.Block  { return blk(id, events.KindSystem, text) }
func user(id, text string) events.Block { return blk(id, events.KindUser, text) }
func llm(id, text string) events.Block  { return blk(id, events.KindLLMText, text) }
func reasoning(id string) events.Block  { return blk(id, events.KindReasoning, "thinking") }

func call(id, callID string) events.Block {
	return events.Block{ID: id, Kind: events.KindToolCall, CallID: callID, ToolName: "get_time", Arguments: `{"tz":"UTC"}`}
}

func result(id, callID string) events.Block {
	return events.Block{ID: id, Kind: events.KindToolResult, CallID: callID, Text: "12:00"}
}

func turn(bs ...events.Block) *projector.Turn {
	return &projector.Turn{Conversation: "c", Blocks: bs}
}

// summarize renders changes compactly so a case can state all of them.
func summarize(cs []replay.Change) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = fmt.Sprintf("%s %s %d->%d", c.Op, c.ID, c.FromIndex, c.ToIndex)
		if len(c.Fields) > 0 {
			out[i] += " " + strings.Join(c.Fields, ",")
		}
	}
	return out
}

func TestDiff(t *testing.T) {
	six := []events.Block{sys("S", "You are helpful."), user("u1", "hi"), llm("l1", "hello"),
		user("u2", "time?"), llm("l2", "noon"), user("u3", "thanks")}
	moved := []events.Block{six[1], six[2], six[3], six[0], six[4], six[5]}

	metaA := sys("S", "You are helpful.")
	metaA.Meta = map[string]string{events.MetaSystemPromptSource: "tmpl-1", events.MetaSection: "system"}
	metaB := metaA.Clone()
	metaB.Trust = events.Trusted
	metaB.Meta[events.MetaSystemPromptSource] = "tmpl-2"
	delete(metaB.Meta, events.MetaSection)
	metaB.Meta[events.MetaSystemPromptLock] = "true"

	fresh := func(bs []events.Block, prefix string) []events.Block {
		out := make([]events.Block, len(bs))
		for i, b := range bs {
			b.ID = prefix + b.ID
			out[i] = b
		}
		return out
	}

	cases := []struct {
		name    string
		a, b    *projector.Turn
		equal   bool
		changes []string
		check   func(t *testing.T, r replay.Result)
	}{
		{
			name: "equal turns", a: turn(six...), b: turn(six...), equal: true, changes: []string{},
			check: func(t *testing.T, r replay.Result) {
				assert.Nil(t, r.SystemPrompt)
				assert.Empty(t, r.Duplicates)
				assert.Empty(t, r.Violations)
			},
		},
		{
			name: "nil turns are empty", a: nil, b: nil, equal: true, changes: []string{},
		},
		{
			name: "moved system prompt is exactly one move", a: turn(six...), b: turn(moved...),
			changes: []string{"moved S 0->3"},
			check: func(t *testing.T, r replay.Result) {
				require.NotNil(t, r.SystemPrompt)
				assert.Equal(t, []string{"index"}, r.SystemPrompt.Fields)
				assert.Equal(t, 0, r.SystemPrompt.FromIndex)
				assert.Equal(t, 3, r.SystemPrompt.ToIndex)
			},
		},
		{
			name:    "added and removed block",
			a:       turn(sys("S", "sys"), user("u1", "hi"), llm("l1", "hello"), user("u2", "bye")),
			b:       turn(sys("S", "sys"), user("u1", "hi"), user("u2", "bye"), llm("l2", "ciao")),
			changes: []string{"removed l1 2->-1", "added l2 -1->3"},
		},
		{
			name:    "removed block sits after its unmoved predecessor",
			a:       turn(user("u1", "a"), llm("x", "gone"), user("u2", "b"), llm("y", "gone too")),
			b:       turn(user("u1", "a"), user("u2", "b")),
			changes: []string{"removed x 1->-1", "removed y 3->-1"},
		},
		{
			name:    "changed text has a unified diff",
			a:       turn(sys("S", "sys"), user("u1", "line one\nhello\nline three")),
			b:       turn(sys("S", "sys"), user("u1", "line one\nhello world\nline three")),
			changes: []string{"changed u1 1->1 text"},
			check: func(t *testing.T, r replay.Result) {
				d := r.Changes[0].TextDiff
				assert.Contains(t, d, "--- A/u1\n+++ B/u1\n")
				assert.Contains(t, d, "-hello\n+hello world\n")
				assert.NotContains(t, d, "No newline")
				require.NotNil(t, r.Changes[0].Before)
				assert.Equal(t, "line one\nhello\nline three", r.Changes[0].Before.Text)
				assert.Nil(t, r.SystemPrompt)
			},
		},
		{
			name: "changed tool arguments are diffed too",
			a:    turn(user("u", "t?"), call("c", "k1")),
			b: turn(user("u", "t?"), func() events.Block {
				c := call("c", "k1")
				c.Arguments = `{"tz":"Europe/Paris"}`
				return c
			}()),
			changes: []string{"changed c 1->1 arguments"},
			check: func(t *testing.T, r replay.Result) {
				assert.Contains(t, r.Changes[0].TextDiff, "+++ B/c#arguments\n")
				assert.Contains(t, r.Changes[0].TextDiff, `+{"tz":"Europe/Paris"}`)
			},
		},
		{
			name:    "moved and changed is one moved change with fields",
			a:       turn(sys("S", "v1"), user("u1", "hi"), user("u2", "yo")),
			b:       turn(user("u1", "hi"), user("u2", "yo"), sys("S", "v2")),
			changes: []string{"moved S 0->2 text"},
			check: func(t *testing.T, r replay.Result) {
				assert.Contains(t, r.Changes[0].TextDiff, "-v1\n+v2\n")
				require.NotNil(t, r.SystemPrompt)
				assert.Equal(t, []string{"index", "text"}, r.SystemPrompt.Fields)
				assert.Contains(t, r.SystemPrompt.TextDiff, "-v1\n+v2\n")
			},
		},
		{
			name:    "duplicated system prompt on B",
			a:       turn(sys("S", "You are helpful."), user("u1", "hi")),
			b:       turn(sys("S", "You are helpful."), user("u1", "hi"), sys("S2", "You are helpful.")),
			changes: []string{"added S2 -1->2"},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Duplicates, 1)
				d := r.Duplicates[0]
				assert.Equal(t, replay.SideB, d.Side)
				assert.Equal(t, "content", d.By)
				assert.Equal(t, events.KindSystem, d.Kind)
				assert.Equal(t, []int{0, 2}, d.Indexes)
				assert.Equal(t, []string{"S", "S2"}, d.IDs)
				assert.Nil(t, r.SystemPrompt, "the first system block is still the active one")
			},
		},
		{
			name:    "same ID twice",
			a:       turn(user("u1", "hi"), llm("l1", "hello")),
			b:       turn(user("u1", "hi"), llm("l1", "hello"), llm("l1", "hello again")),
			changes: []string{"added l1 -1->2"},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Duplicates, 1)
				assert.Equal(t, replay.Duplicate{Side: replay.SideB, By: "id", Kind: events.KindLLMText,
					Indexes: []int{1, 2}, IDs: []string{"l1", "l1"}, Block: llm("l1", "hello")}, r.Duplicates[0])
			},
		},
		{
			name:    "a copied block is one id duplicate, not also a content one",
			a:       turn(user("u1", "hi"), user("u1", "hi")),
			b:       turn(user("u1", "hi"), user("u1", "hi")),
			equal:   true,
			changes: []string{},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Duplicates, 2)
				for i, side := range []replay.Side{replay.SideA, replay.SideB} {
					assert.Equal(t, side, r.Duplicates[i].Side)
					assert.Equal(t, "id", r.Duplicates[i].By)
				}
			},
		},
		{
			name:    "reasoning without follower",
			a:       turn(user("u1", "hi"), reasoning("r1"), user("u2", "hm?"), reasoning("r2"), llm("l1", "ok"), reasoning("r3")),
			b:       turn(user("u1", "hi"), reasoning("r1"), user("u2", "hm?"), reasoning("r2"), llm("l1", "ok"), reasoning("r3")),
			equal:   true,
			changes: []string{},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Violations, 4)
				for i, side := range []replay.Side{replay.SideA, replay.SideA, replay.SideB, replay.SideB} {
					v := r.Violations[i]
					assert.Equal(t, side, v.Side)
					assert.Equal(t, replay.RuleReasoningFollower, v.Rule)
					assert.Equal(t, []int{1, 5}[i%2], v.Index)
				}
				assert.Contains(t, r.Violations[0].Message, "followed by user at A[2]")
				assert.Equal(t, "r1", r.Violations[0].ID)
				assert.Contains(t, r.Violations[1].Message, "last block")
			},
		},
		{
			// Anthropic's thinking then redacted thinking, then the text:
			// a row the model produced, which replay --check allows; a
			// row that ends badly is reported once, at its first block.
			name:    "reasoning in a row",
			a:       turn(user("u1", "hi"), reasoning("r1"), reasoning("r2"), llm("l1", "ok")),
			b:       turn(user("u1", "hi"), reasoning("r1"), reasoning("r2"), user("u2", "hm?")),
			changes: []string{"removed l1 3->-1", "added u2 -1->3"},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Violations, 1)
				v := r.Violations[0]
				assert.Equal(t, replay.SideB, v.Side)
				assert.Equal(t, 1, v.Index)
				assert.Equal(t, "is followed by reasoning at B[2], then by user at B[3]; a reasoning block, or a row of them, must be immediately followed by llm_text or tool_call", v.Message)
			},
		},
		{
			name:    "reasoning violation only on B",
			a:       turn(user("u1", "hi"), reasoning("r1"), llm("l1", "ok")),
			b:       turn(user("u1", "hi"), reasoning("r1"), user("u2", "more"), llm("l1", "ok")),
			changes: []string{"added u2 -1->2"},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Violations, 1)
				assert.Equal(t, replay.Violation{Side: replay.SideB, Rule: replay.RuleReasoningFollower, Index: 1,
					ID: "r1", Kind: events.KindReasoning,
					Message: "is followed by user at B[2]; a reasoning block must be immediately followed by llm_text or tool_call"},
					r.Violations[0])
			},
		},
		{
			name:    "tool_result without tool_call",
			a:       turn(user("u1", "t?"), call("c1", "k1"), result("t1", "k1"), llm("l1", "noon")),
			b:       turn(user("u1", "t?"), result("t1", "k1"), llm("l1", "noon")),
			changes: []string{"removed c1 1->-1"},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Violations, 1)
				v := r.Violations[0]
				assert.Equal(t, replay.SideB, v.Side)
				assert.Equal(t, replay.RuleResultWithoutCall, v.Rule)
				assert.Equal(t, 1, v.Index)
				assert.Contains(t, v.Message, `"k1"`)
			},
		},
		{
			name:    "tool_result before its tool_call",
			a:       turn(user("u1", "t?"), call("c1", "k1"), result("t1", "k1")),
			b:       turn(user("u1", "t?"), result("t1", "k1"), call("c1", "k1"), user("u2", "?")),
			changes: []string{"moved c1 1->2", "added u2 -1->3"}, // moving t1 instead is as small: the earlier block is reported
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Violations, 2)
				assert.Equal(t, replay.RuleResultWithoutCall, r.Violations[0].Rule)
				assert.Equal(t, 1, r.Violations[0].Index)
				assert.Equal(t, replay.RuleCallWithoutResult, r.Violations[1].Rule)
				assert.Equal(t, 2, r.Violations[1].Index)
			},
		},
		{
			name:    "tool_call without result before the next user block",
			a:       turn(user("u1", "t?"), call("c1", "k1"), call("c2", "k2"), result("t2", "k2"), user("u2", "and?"), call("c3", "k3")),
			b:       turn(user("u1", "t?"), call("c1", "k1"), call("c2", "k2"), result("t2", "k2"), user("u2", "and?"), call("c3", "k3")),
			equal:   true,
			changes: []string{},
			check: func(t *testing.T, r replay.Result) {
				require.Len(t, r.Violations, 2, "c3 is still pending, not a violation")
				for i, v := range r.Violations {
					assert.Equal(t, []replay.Side{replay.SideA, replay.SideB}[i], v.Side)
					assert.Equal(t, replay.RuleCallWithoutResult, v.Rule)
					assert.Equal(t, 1, v.Index)
				}
				assert.Contains(t, r.Violations[0].Message, "before the user block at A[4]")
			},
		},
		{
			name:    "meta and trust change",
			a:       turn(metaA, user("u1", "hi")),
			b:       turn(metaB, user("u1", "hi")),
			changes: []string{"changed S 0->0 trust,meta"},
			check: func(t *testing.T, r replay.Result) {
				c := r.Changes[0]
				assert.Empty(t, c.TextDiff)
				assert.Equal(t, []replay.KeyChange{
					{Key: events.MetaSection, Op: replay.OpRemoved, From: "system"},
					{Key: events.MetaSystemPromptLock, Op: replay.OpAdded, To: "true"},
					{Key: events.MetaSystemPromptSource, Op: replay.OpChanged, From: "tmpl-1", To: "tmpl-2"},
				}, c.Meta)
				require.NotNil(t, c.Before)
				assert.Equal(t, events.Untrusted, c.Before.Trust)
				assert.Equal(t, events.Trusted, c.Block.Trust)
				require.NotNil(t, r.SystemPrompt)
				assert.Equal(t, []string{"trust", "meta"}, r.SystemPrompt.Fields)
			},
		},
		{
			name: "nil and empty meta are the same",
			a:    turn(user("u1", "hi")),
			b: turn(func() events.Block {
				b := user("u1", "hi")
				b.Meta = map[string]string{}
				return b
			}()),
			equal: true, changes: []string{},
		},
		{
			name: "data change",
			a: &projector.Turn{Blocks: []events.Block{user("u1", "hi")},
				Data: map[string]string{"tz": "UTC", "page": "/home", "same": "x"}},
			b: &projector.Turn{Blocks: []events.Block{user("u1", "hi")},
				Data: map[string]string{"tz": "Europe/Paris", "profile": "pro", "same": "x"}},
			changes: []string{},
			check: func(t *testing.T, r replay.Result) {
				assert.Equal(t, []replay.KeyChange{
					{Key: "page", Op: replay.OpRemoved, From: "/home"},
					{Key: "profile", Op: replay.OpAdded, To: "pro"},
					{Key: "tz", Op: replay.OpChanged, From: "UTC", To: "Europe/Paris"},
				}, r.Data)
			},
		},
		{
			name: "fresh IDs, same content: no change",
			a:    turn(six...), b: turn(fresh(six, "x-")...),
			equal: true, changes: []string{},
			check: func(t *testing.T, r replay.Result) {
				assert.Equal(t, 6, r.MatchedByContent)
				assert.Nil(t, r.SystemPrompt, "the active prompt is the same block under a new ID")
			},
		},
		{
			name: "fresh IDs, moved system prompt",
			a:    turn(six...), b: turn(fresh(moved, "x-")...),
			changes: []string{"moved x-S 0->3"},
			check: func(t *testing.T, r replay.Result) {
				assert.Equal(t, "S", r.Changes[0].FromID)
				assert.Equal(t, 6, r.MatchedByContent)
			},
		},
		{
			name: "no IDs at all (a foreign export) still match by content",
			a:    turn(fresh(six, "")...), b: turn(sys("", "You are helpful."), user("", "hi"), llm("", "hello")),
			changes: []string{"removed u2 3->-1", "removed l2 4->-1", "removed u3 5->-1"},
		},
		{
			name:    "content match pairs repeated texts in order",
			a:       turn(user("a1", "ok"), llm("a2", "sure"), user("a3", "ok")),
			b:       turn(user("b1", "ok"), llm("b2", "sure"), user("b3", "ok"), llm("b4", "sure")),
			changes: []string{"added b4 -1->3"},
			check: func(t *testing.T, r replay.Result) {
				assert.Equal(t, 3, r.MatchedByContent)
			},
		},
		{
			name:    "IDs win over content",
			a:       turn(user("u1", "ok"), user("u2", "ok")),
			b:       turn(user("u2", "ok"), user("u1", "ok")),
			changes: []string{"moved u1 0->1"},
		},
		{
			name:    "another block becomes the active system prompt",
			a:       turn(sys("S", "old"), user("u1", "hi")),
			b:       turn(sys("S2", "new"), sys("S", "old"), user("u1", "hi")),
			changes: []string{"added S2 -1->0"},
			check: func(t *testing.T, r replay.Result) {
				require.NotNil(t, r.SystemPrompt)
				assert.Equal(t, []string{"id", "text"}, r.SystemPrompt.Fields, "same index 0, another block")
				assert.Equal(t, "S", r.SystemPrompt.FromID)
				assert.Equal(t, "S2", r.SystemPrompt.ToID)
			},
		},
		{
			name:    "system prompt removed",
			a:       turn(sys("S", "old"), user("u1", "hi")),
			b:       turn(user("u1", "hi")),
			changes: []string{"removed S 0->-1"},
			check: func(t *testing.T, r replay.Result) {
				require.NotNil(t, r.SystemPrompt)
				assert.Equal(t, []string{"removed"}, r.SystemPrompt.Fields)
				assert.Equal(t, -1, r.SystemPrompt.ToIndex)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := replay.Diff(tc.a, tc.b)
			assert.Equal(t, tc.equal, r.Equal())
			assert.Equal(t, tc.changes, summarize(r.Changes))
			if tc.check != nil {
				tc.check(t, r)
			}
		})
	}
}

func TestDiffDoesNotChangeItsInputs(t *testing.T) {
	a := turn(sys("S", "v1"), user("u1", "hi"))
	a.Blocks[0].Meta = map[string]string{"k": "v"}
	b := turn(user("u1", "hi"), sys("S", "v2"))
	before := projector.Hash(a) + projector.Hash(b)

	r := replay.Diff(a, b)
	require.Len(t, r.Changes, 1)
	r.Changes[0].Before.Meta["k"] = "changed"

	assert.Equal(t, before, projector.Hash(a)+projector.Hash(b))
}

func TestResultJSON(t *testing.T) {
	t.Run("empty lists are [] not null", func(t *testing.T) {
		out, err := json.Marshal(replay.Diff(turn(user("u1", "hi")), turn(user("u1", "hi"))))
		require.NoError(t, err)
		assert.JSONEq(t, `{"changes":[],"data":[],"duplicates":[],"violations":[],"matched_by_content":0}`, string(out))
	})
	t.Run("field names are stable", func(t *testing.T) {
		r := replay.Diff(turn(sys("S", "a"), user("u1", "hi")), turn(user("u1", "hi"), sys("S", "b")))
		out, err := json.Marshal(r)
		require.NoError(t, err)
		var got map[string]any
		require.NoError(t, json.Unmarshal(out, &got))
		ch := got["changes"].([]any)[0].(map[string]any)
		for _, k := range []string{"op", "id", "kind", "from_index", "to_index", "fields", "text_diff", "block", "before"} {
			assert.Contains(t, ch, k)
		}
		sp := got["system_prompt"].(map[string]any)
		for _, k := range []string{"fields", "from_id", "from_index", "to_id", "to_index", "text_diff"} {
			assert.Contains(t, sp, k)
		}
		var back replay.Result
		require.NoError(t, json.Unmarshal(out, &back))
		assert.Equal(t, r, back)
	})
}

func TestWriteText(t *testing.T) {
	a := &projector.Turn{Blocks: []events.Block{
		sys("S", "You are a helpful assistant.\nBe brief."), user("u1", "hi"), llm("l1", "hello"),
		user("u2", "bye"), reasoning("r1"), llm("gone", "old answer")}, Data: map[string]string{"tz": "UTC"}}
	b := &projector.Turn{Blocks: []events.Block{
		user("u1", "hi there"), llm("l1", "hello"), user("u2", "bye"), sys("S", "You are a helpful assistant.\nBe brief."),
		reasoning("r1"), user("u3", "\x1b[31mred "+strings.Repeat("x", 80)), sys("S9", "You are a helpful assistant.\nBe brief.")},
		Data: map[string]string{"tz": "Europe/Paris"}}
	r := replay.Diff(a, b)

	var plain bytes.Buffer
	require.NoError(t, r.WriteText(&plain, false))
	out := plain.String()
	t.Log("\n" + out)
	assert.NotContains(t, out, "\x1b", "no ANSI without color, not even from block text")
	for _, want := range []string{
		`~ changed  user        u1  A[1] -> B[0]  [text]  "hi there"`,
		"    -hi\n    +hi there\n",
		`> moved    system      S  A[0] -> B[3]  "You are a helpful assistant.⏎Be brief."`,
		`- removed  llm_text    gone  A[5]  "old answer"`,
		`+ added    user        u3  B[5]  "\x1b[31mred ` + strings.Repeat("x", 51) + `…"`, // 60 runes, ESC is one
		"* system prompt [index]  S A[0] -> S B[3]",
		`~ changed  data        "tz" "UTC" -> "Europe/Paris"`,
		"duplicates:\n  B by content  system       B[3], B[6]  ids S, S9",
		"violations:\n  B[4]  reasoning    r1  reasoning_without_follower: is followed by user at B[5]",
		"different: 5 block changes (1 moved, 1 changed, 2 added, 1 removed), system prompt changed, 1 data change; 1 duplicate, 1 violation",
	} {
		assert.Contains(t, out, want)
	}

	var colored bytes.Buffer
	require.NoError(t, r.WriteText(&colored, true))
	col := colored.String()
	for _, want := range []string{"\x1b[32m+ added", "\x1b[31m- removed", "\x1b[33m~ changed", "\x1b[36m> moved", "\x1b[35m  B[4]"} {
		assert.Contains(t, col, want)
	}
	assert.NotContains(t, col, "\x1b[31mred", "block text never carries its own escapes through")

	var eq bytes.Buffer
	require.NoError(t, replay.Diff(b, b.Clone()).WriteText(&eq, true))
	assert.Equal(t, "duplicates:\n"+
		"  A by content  system       A[3], A[6]  ids S, S9  \"You are a helpful assistant.⏎Be brief.\"\n"+
		"  B by content  system       B[3], B[6]  ids S, S9  \"You are a helpful assistant.⏎Be brief.\"\n"+
		"violations:\n"+
		"\x1b[35m  A[4]  reasoning    r1  reasoning_without_follower: is followed by user at A[5]; a reasoning block must be immediately followed by llm_text or tool_call\x1b[0m\n"+
		"\x1b[35m  B[4]  reasoning    r1  reasoning_without_follower: is followed by user at B[5]; a reasoning block must be immediately followed by llm_text or tool_call\x1b[0m\n"+
		"equal; 2 duplicates, 2 violations\n", eq.String())

	var empty bytes.Buffer
	require.NoError(t, replay.Diff(nil, nil).WriteText(&empty, false))
	assert.Equal(t, "equal\n", empty.String())
}

// failWriter fails every write, to show WriteText reports w's error.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestWriteTextReportsWriteErrors(t *testing.T) {
	r := replay.Diff(turn(user("u1", "a")), turn(user("u1", "b")))
	assert.EqualError(t, r.WriteText(failWriter{}, false), "disk full")
}

// drawTurn draws a Turn with unique IDs; texts come from a small set so
// that content duplicates happen.
func drawTurn(t *rapid.T, maxBlocks int) *projector.Turn {
	kinds := []events.Kind{events.KindSystem, events.KindUser, events.KindLLMText,
		events.KindReasoning, events.KindToolCall, events.KindToolResult, events.KindOther}
	n := rapid.IntRange(0, maxBlocks).Draw(t, "blocks")
	tr := &projector.Turn{Conversation: "c", Blocks: make([]events.Block, n)}
	for i := range tr.Blocks {
		b := events.Block{
			ID:   fmt.Sprintf("b%03d", i),
			Kind: rapid.SampledFrom(kinds).Draw(t, "kind"),
			Text: rapid.SampledFrom([]string{"", "a", "b", "a\nb", "hello"}).Draw(t, "text"),
		}
		if b.Kind == events.KindToolCall || b.Kind == events.KindToolResult {
			b.CallID = rapid.SampledFrom([]string{"k1", "k2", "k3"}).Draw(t, "call")
		}
		if rapid.Bool().Draw(t, "trusted") {
			b.Trust = events.Trusted
		}
		if rapid.Bool().Draw(t, "meta") {
			b.Meta = map[string]string{events.MetaSection: rapid.SampledFrom([]string{"system", "conversation"}).Draw(t, "section")}
		}
		tr.Blocks[i] = b
	}
	if rapid.Bool().Draw(t, "data") {
		tr.Data = map[string]string{"tz": rapid.SampledFrom([]string{"UTC", "CET"}).Draw(t, "tz")}
	}
	return tr
}

// lisLen is the textbook O(n²) longest strictly increasing subsequence,
// independent of Diff's patience sort.
func lisLen(s []int) int {
	best := 0
	l := make([]int, len(s))
	for i := range s {
		l[i] = 1
		for j := 0; j < i; j++ {
			if s[j] < s[i] && l[j]+1 > l[i] {
				l[i] = l[j] + 1
			}
		}
		best = max(best, l[i])
	}
	return best
}

func TestDiffProperties(t *testing.T) {
	t.Run("a turn equals itself", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a := drawTurn(t, 40)
			r := replay.Diff(a, a.Clone())
			if !r.Equal() || len(r.Changes) != 0 || r.SystemPrompt != nil {
				t.Fatalf("Diff(t, t) = %+v, want equal", r)
			}
		})
	})
	t.Run("a permutation reports only moves, len - LIS of them", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a := drawTurn(t, 40)
			perm := rapid.Permutation(indexes(len(a.Blocks))).Draw(t, "perm") // perm[j] = A index at B position j
			b := a.Clone()
			pos := make([]int, len(perm)) // pos[i] = B position of A's block i
			for j, i := range perm {
				b.Blocks[j] = a.Blocks[i].Clone()
				pos[i] = j
			}
			r := replay.Diff(a, b)
			for _, c := range r.Changes {
				if c.Op != replay.OpMoved || len(c.Fields) > 0 {
					t.Fatalf("change %+v in a pure permutation", c)
				}
			}
			if got, want := len(r.Changes), len(pos)-lisLen(pos); got != want {
				t.Fatalf("got %d moves, want %d (len %d - LIS)", got, want, len(pos))
			}
			if r.Equal() != (len(r.Changes) == 0) {
				t.Fatalf("Equal() = %v with %d moves", r.Equal(), len(r.Changes))
			}
		})
	})
	t.Run("with fresh IDs a permutation reports only moves", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a := drawTurn(t, 30)
			// With distinct texts the content pairing is the true one and the
			// move count is exact. With repeated texts, identical blocks pair in
			// order of appearance, which can cost more or fewer moves than the
			// permutation's own pairing: only "moves only" holds.
			distinct := rapid.Bool().Draw(t, "distinct")
			if distinct {
				for i := range a.Blocks {
					a.Blocks[i].Text += fmt.Sprintf("#%d", i)
				}
			}
			perm := rapid.Permutation(indexes(len(a.Blocks))).Draw(t, "perm")
			b := a.Clone()
			pos := make([]int, len(perm))
			for j, i := range perm {
				b.Blocks[j] = a.Blocks[i].Clone()
				b.Blocks[j].ID = "x" + b.Blocks[j].ID
				pos[i] = j
			}
			r := replay.Diff(a, b)
			for _, c := range r.Changes {
				if c.Op != replay.OpMoved || len(c.Fields) > 0 {
					t.Fatalf("change %+v in a permutation with fresh IDs", c)
				}
			}
			if got, want := len(r.Changes), len(pos)-lisLen(pos); distinct && got != want {
				t.Fatalf("got %d moves, want len - LIS = %d", got, want)
			}
			if r.MatchedByContent != len(pos) {
				t.Fatalf("matched %d by content, want %d", r.MatchedByContent, len(pos))
			}
		})
	})
	t.Run("changes account for every block, in B order, symmetrically", func(t *testing.T) {
		rapid.Check(t, func(t *rapid.T) {
			a := drawTurn(t, 30)
			b := edit(t, a)
			r := replay.Diff(a, b)
			count := map[replay.Op]int{}
			lastTo := -1
			for _, c := range r.Changes {
				count[c.Op]++
				switch c.Op {
				case replay.OpRemoved:
					if c.ToIndex != -1 || !assert.ObjectsAreEqual(a.Blocks[c.FromIndex], c.Block) {
						t.Fatalf("bad removal %+v", c)
					}
				default:
					if c.ToIndex <= lastTo {
						t.Fatalf("changes not in B order: %v", summarize(r.Changes))
					}
					lastTo = c.ToIndex
					if !assert.ObjectsAreEqual(b.Blocks[c.ToIndex], c.Block) {
						t.Fatalf("change %+v does not carry B's block", c)
					}
				}
			}
			if len(a.Blocks)-count[replay.OpRemoved] != len(b.Blocks)-count[replay.OpAdded] {
				t.Fatalf("matched counts differ: A %d - %d removed, B %d - %d added",
					len(a.Blocks), count[replay.OpRemoved], len(b.Blocks), count[replay.OpAdded])
			}
			back := replay.Diff(b, a)
			bc := map[replay.Op]int{}
			for _, c := range back.Changes {
				bc[c.Op]++
			}
			if bc[replay.OpAdded] != count[replay.OpRemoved] || bc[replay.OpRemoved] != count[replay.OpAdded] ||
				bc[replay.OpMoved] != count[replay.OpMoved] || back.Equal() != r.Equal() {
				t.Fatalf("Diff(a,b) %v and Diff(b,a) %v disagree", count, bc)
			}
		})
	})
}

func indexes(n int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = i
	}
	return s
}

// edit draws B from A: some blocks removed, changed, moved, added.
func edit(t *rapid.T, a *projector.Turn) *projector.Turn {
	b := a.Clone()
	b.Blocks = b.Blocks[:0]
	for _, blk := range a.Clone().Blocks {
		switch rapid.IntRange(0, 9).Draw(t, "op") {
		case 0: // removed
			continue
		case 1:
			blk.Text += "!"
		case 2:
			blk.Trust = events.Trusted
		}
		b.Blocks = append(b.Blocks, blk)
	}
	for k := rapid.IntRange(0, 3).Draw(t, "adds"); k > 0; k-- {
		at := rapid.IntRange(0, len(b.Blocks)).Draw(t, "at")
		nb := events.Block{ID: fmt.Sprintf("new%d", k), Kind: events.KindUser, Text: rapid.SampledFrom([]string{"a", "fresh"}).Draw(t, "text")}
		b.Blocks = append(b.Blocks[:at], append([]events.Block{nb}, b.Blocks[at:]...)...)
	}
	for k := rapid.IntRange(0, 3).Draw(t, "moves"); k > 0 && len(b.Blocks) > 1; k-- {
		from := rapid.IntRange(0, len(b.Blocks)-1).Draw(t, "from")
		to := rapid.IntRange(0, len(b.Blocks)-1).Draw(t, "to")
		m := b.Blocks[from]
		b.Blocks = append(b.Blocks[:from], b.Blocks[from+1:]...)
		b.Blocks = append(b.Blocks[:to], append([]events.Block{m}, b.Blocks[to:]...)...)
	}
	return b
}

// bigTurns builds two 5,000-block Turns of multi-line texts: B moves 50
// blocks (the system prompt among them), changes 100 texts, adds 100 and
// removes 50.
func bigTurns(n int) (a, b *projector.Turn) {
	rng := rand.New(rand.NewPCG(1, 2))
	kinds := []events.Kind{events.KindUser, events.KindLLMText, events.KindReasoning, events.KindLLMText}
	a = &projector.Turn{Conversation: "big", Data: map[string]string{"tz": "UTC"}}
	for i := range n {
		k := kinds[i%len(kinds)]
		if i == 0 {
			k = events.KindSystem
		}
		text := fmt.Sprintf("block %d\n%s\nline three of %d\n%s", i, strings.Repeat("lorem ipsum ", 8), i, strings.Repeat("dolor ", 10))
		a.Blocks = append(a.Blocks, events.Block{ID: fmt.Sprintf("01J%023d", i), Kind: k, Text: text,
			Meta: map[string]string{events.MetaSection: "conversation"}})
	}
	b = a.Clone()
	for range 100 {
		i := rng.IntN(len(b.Blocks))
		b.Blocks[i].Text = strings.Replace(b.Blocks[i].Text, "line three", "line 3", 1)
	}
	for k := range 50 {
		i := rng.IntN(len(b.Blocks))
		if k == 0 {
			i = 0
		}
		m := b.Blocks[i]
		b.Blocks = append(b.Blocks[:i], b.Blocks[i+1:]...)
		j := rng.IntN(len(b.Blocks))
		b.Blocks = append(b.Blocks[:j], append([]events.Block{m}, b.Blocks[j:]...)...)
	}
	for range 50 {
		i := rng.IntN(len(b.Blocks))
		b.Blocks = append(b.Blocks[:i], b.Blocks[i+1:]...)
	}
	for k := range 100 {
		i := rng.IntN(len(b.Blocks))
		nb := events.Block{ID: fmt.Sprintf("NEW%023d", k), Kind: events.KindUser, Text: fmt.Sprintf("new %d", k)}
		b.Blocks = append(b.Blocks[:i], append([]events.Block{nb}, b.Blocks[i:]...)...)
	}
	return a, b
}

func TestDiffLargeTurns(t *testing.T) {
	a, b := bigTurns(5000)
	r := replay.Diff(a, b)
	count := map[replay.Op]int{}
	for _, c := range r.Changes {
		count[c.Op]++
	}
	assert.Equal(t, 100, count[replay.OpAdded])
	assert.LessOrEqual(t, count[replay.OpRemoved], 50)
	assert.Positive(t, count[replay.OpChanged])
	assert.LessOrEqual(t, count[replay.OpMoved], 50)
	assert.Positive(t, count[replay.OpMoved])
	assert.NotNil(t, r.SystemPrompt)
}

func BenchmarkDiff5000(b *testing.B) {
	ta, tb := bigTurns(5000)
	b.ReportAllocs()
	for b.Loop() {
		replay.Diff(ta, tb)
	}
}
