package events

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/vmihailenco/msgpack/v5"
)

// nested wraps inner in depth one-element arrays.
func nested(depth int, inner []byte) []byte {
	return append(bytes.Repeat([]byte{0x91}, depth), inner...)
}

func TestCheckStructure(t *testing.T) {
	// Scalars of every msgpack width, inside a container, must be skipped
	// exactly: a miscounted body would read the next value from its middle.
	scalars := []any{
		nil, true, false, 0, -1, 127, -32, 200, -100, 40000, -40000, int64(1) << 40, -(int64(1) << 40), uint64(math.MaxUint64),
		float32(1.5), 2.5, "", "short", string(make([]byte, 40)), string(make([]byte, 300)), string(make([]byte, 70000)),
		[]byte{}, []byte{1}, make([]byte, 300), make([]byte, 70000),
		time.Unix(1, 0), time.Unix(1, 5), time.Unix(1<<40, 5), // fixext4, fixext8, ext8 (12 bytes)
		msgpack.RawMessage{0xd4, 1, 2}, msgpack.RawMessage{0xd5, 1, 2, 3}, msgpack.RawMessage{0xd8, 1, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
		msgpack.RawMessage{0xc8, 0, 3, 1, 'a', 'b', 'c'}, msgpack.RawMessage{0xc9, 0, 0, 0, 2, 1, 'a', 'b'},
		make([]int, 20), make([]int, 70000), map[string]int{"a": 1}, make(map[int]int, 0),
	}
	bigMap := map[int]int{}
	for i := 0; i < 70000; i++ {
		bigMap[i] = i
	}
	scalars = append(scalars, bigMap)

	for _, v := range scalars {
		inner, err := msgpack.Marshal(v)
		require.NoError(t, err)
		// [v, [[...deep...]]]: the deep part comes after v, so it is only
		// seen when v was skipped correctly.
		ok := append(append([]byte{0x92}, inner...), nested(maxNesting-1, []byte{0xc0})...)
		assert.NoError(t, checkStructure(ok), "%T %v: depth %d", v, v, maxNesting)
		bad := append(append([]byte{0x92}, inner...), nested(maxNesting, []byte{0xc0})...)
		assert.ErrorIs(t, checkStructure(bad), ErrInvalid, "%T: depth %d", v, maxNesting+1)
	}

	tests := []struct {
		name     string
		data     []byte
		wantText string // part of the error; empty when the data is fine
	}{
		{name: "scalar", data: []byte{0x01}},
		{name: "depth at the limit", data: nested(maxNesting, []byte{0xc0})},
		{name: "depth over the limit", data: nested(maxNesting+1, []byte{0xc0}), wantText: "nest deeper than 32 levels"},
		{name: "empty containers do not count", data: nested(maxNesting, []byte{0x90})},
		{name: "maps count", data: append(bytes.Repeat([]byte{0x81, 0xa0}, maxNesting+1), 0xc0), wantText: "nest deeper"},
		{name: "map keys count", data: append(bytes.Repeat([]byte{0x81}, maxNesting+1), 0xc0, 0xc0), wantText: "nest deeper"},
		{name: "array16 and map32 headers", data: append(bytes.Repeat([]byte{0xdc, 0, 1, 0xdf, 0, 0, 0, 1, 0xa0}, maxNesting/2+1), 0xc0), wantText: "nest deeper"},
		{name: "siblings do not add up", data: append([]byte{0xdc, 0, 200}, bytes.Repeat(nested(maxNesting-1, []byte{0xc0}), 200)...)},
		{name: "only the first value is walked", data: []byte{0x01, 0xc1}},
		{name: "empty", data: nil, wantText: "truncated"},
		{name: "ends inside a container", data: []byte{0x92, 0x91, 0x01}, wantText: "truncated"},
		{name: "container claiming more items than bytes", data: []byte{0x92, 0x01}, wantText: "offset 0 claims more than the 1 bytes left"},
		{name: "ends inside a header", data: []byte{0x91, 0xdd, 0x00}, wantText: "truncated"},
		{name: "ends inside a number", data: []byte{0xcb, 0x00}, wantText: "claims more than the 1 bytes left"},
		{name: "string longer than the input", data: []byte{0x92, 0xdb, 0xff, 0xff, 0xff, 0xff, 0x91}, wantText: "offset 1 claims more"},
		{name: "bin32 of 4 GiB", data: []byte{0xc6, 0xff, 0xff, 0xff, 0xff, 0x00}, wantText: "claims more"},
		{name: "ext32 of 4 GiB", data: []byte{0xc9, 0xff, 0xff, 0xff, 0xff, 0x00, 0x00}, wantText: "claims more"},
		{name: "array claiming 2^32-1 items", data: []byte{0xdd, 0xff, 0xff, 0xff, 0xff, 0x01}, wantText: "claims more"},
		{name: "map claiming 2^31 entries", data: []byte{0xdf, 0x80, 0x00, 0x00, 0x00, 0x01, 0x01}, wantText: "claims more"},
		{name: "array claiming one item more than bytes", data: []byte{0x93, 0x01, 0x01}, wantText: "claims more"},
		{name: "reserved code", data: []byte{0x91, 0xc1}, wantText: "byte 0xc1 at offset 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkStructure(tc.data)
			if tc.wantText == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorIs(t, err, ErrInvalid)
			assert.ErrorContains(t, err, tc.wantText)
		})
	}
}

func TestCanonicalMakesDecodeAFixedPoint(t *testing.T) {
	// Each payload as a hand-written message might carry it: every
	// optional map or list present but empty. Decode must give what it
	// gives for the message without them, which is what Encode writes.
	empty := map[string]string{}
	tests := []struct {
		name string
		p    Payload
		want Payload
	}{
		{name: "started", p: ConversationStarted{Blocks: []Block{}, Data: empty}, want: ConversationStarted{}},
		{name: "started blocks", p: ConversationStarted{Blocks: []Block{{ID: "a", Kind: KindUser, Meta: empty}}},
			want: ConversationStarted{Blocks: []Block{{ID: "a", Kind: KindUser}}}},
		{name: "user", p: UserAppended{BlockID: "u", Meta: empty}, want: UserAppended{BlockID: "u"}},
		{name: "system set", p: SystemPromptSet{BlockID: "s", Meta: empty, Variables: empty}, want: SystemPromptSet{BlockID: "s"}},
		{name: "system replaced", p: SystemPromptReplaced{BlockID: "s", Meta: empty, Variables: empty}, want: SystemPromptReplaced{BlockID: "s"}},
		{name: "reasoning", p: ReasoningAppended{BlockID: "r", Meta: empty}, want: ReasoningAppended{BlockID: "r"}},
		{name: "llm text", p: LLMTextAppended{BlockID: "l", Meta: empty}, want: LLMTextAppended{BlockID: "l"}},
		{name: "tool call", p: ToolCalled{BlockID: "t", CallID: "c", Name: "n", Meta: empty}, want: ToolCalled{BlockID: "t", CallID: "c", Name: "n"}},
		{name: "tool result", p: ToolResult{BlockID: "t", CallID: "c", Meta: empty}, want: ToolResult{BlockID: "t", CallID: "c"}},
		{name: "split", p: BlockSplit{BlockID: "b", Into: []Block{{ID: "x", Kind: KindUser, Meta: empty}}},
			want: BlockSplit{BlockID: "b", Into: []Block{{ID: "x", Kind: KindUser}}}},
		{name: "compacted", p: TurnCompacted{Removed: []string{"a"}, Summary: &Block{ID: "s", Kind: KindOther, Meta: empty}},
			want: TurnCompacted{Removed: []string{"a"}, Summary: &Block{ID: "s", Kind: KindOther}}},
		{name: "data", p: DataSet{Values: empty, Unset: []string{"a"}}, want: DataSet{Unset: []string{"a"}}},
		{name: "data unset", p: DataSet{Values: map[string]string{"a": "1"}, Unset: []string{}}, want: DataSet{Values: map[string]string{"a": "1"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Write the empty maps explicitly, as Encode never would.
			raw, err := msgpack.Marshal(tc.p)
			require.NoError(t, err)
			w := map[string]any{
				"id": [16]byte{1}, "conv": "c", "type": string(tc.p.EventType()), "v": 1,
				"time": time.Unix(1, 0), "cause": "r", "step": 0, "actor": "a",
				"payload": msgpack.RawMessage(withEmpties(t, raw, tc.p)),
			}
			data, err := msgpack.Marshal([]any{w})
			require.NoError(t, err)
			got, err := Decode(data)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got[0].Payload)

			again, err := Encode(got...)
			require.NoError(t, err)
			back, err := Decode(again)
			require.NoError(t, err)
			assert.Equal(t, got, back)
		})
	}
}

// withEmpties re-encodes a payload as a generic map that keeps its empty
// maps and lists, which the struct's omitempty tags would drop.
func withEmpties(t *testing.T, raw []byte, p Payload) []byte {
	t.Helper()
	var m map[string]any
	require.NoError(t, msgpack.Unmarshal(raw, &m))
	switch p := p.(type) {
	case ConversationStarted:
		if p.Data != nil {
			m["data"] = map[string]string{}
		}
		if p.Blocks != nil && len(p.Blocks) == 0 {
			m["blocks"] = []any{}
		}
		if len(p.Blocks) > 0 {
			m["blocks"] = []any{map[string]any{"id": p.Blocks[0].ID, "kind": string(p.Blocks[0].Kind), "meta": map[string]string{}}}
		}
	case BlockSplit:
		m["into"] = []any{map[string]any{"id": p.Into[0].ID, "kind": string(p.Into[0].Kind), "meta": map[string]string{}}}
	case TurnCompacted:
		m["summary"] = map[string]any{"id": p.Summary.ID, "kind": string(p.Summary.Kind), "meta": map[string]string{}}
	case DataSet:
		if p.Values != nil && len(p.Values) == 0 {
			m["values"] = map[string]string{}
		}
		if p.Unset != nil && len(p.Unset) == 0 {
			m["unset"] = []string{}
		}
	default:
		m["meta"] = map[string]string{}
		if p.EventType() == TypeSystemPromptSet || p.EventType() == TypeSystemPromptReplaced {
			m["vars"] = map[string]string{}
		}
	}
	out, err := msgpack.Marshal(m)
	require.NoError(t, err)
	return out
}
