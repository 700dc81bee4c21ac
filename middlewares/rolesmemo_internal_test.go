package middlewares

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

func memoTx(t *testing.T, conv string, texts ...string) *engine.Tx {
	t.Helper()
	var blocks []events.Block
	for i, s := range texts {
		blocks = append(blocks, events.Block{ID: fmt.Sprintf("b%d", i), Kind: events.KindUser, Text: s})
	}
	turn := projector.New(conv)
	require.NoError(t, projector.Apply(turn, events.New(conv, "setup", 0, "test", events.ConversationStarted{Blocks: blocks})))
	return engine.NewTx(turn, "r1")
}

// checkMemo asserts the memo's bounds and that its byte count is the sum
// of the texts it holds.
func checkMemo(t *testing.T, m *rolesMemo) {
	t.Helper()
	assert.LessOrEqual(t, len(m.convs), m.maxConvs, "conversations")
	assert.LessOrEqual(t, m.bytes, m.maxBytes, "bytes")
	assert.Equal(t, len(m.convs), m.lru.Len())
	sum := 0
	for _, c := range m.convs {
		n := 0
		for _, s := range c.clean {
			n += len(s)
		}
		assert.Equal(t, n, c.bytes, "conversation %s", c.conv)
		assert.Equal(t, n, c.accounted, "conversation %s", c.conv)
		sum += n
	}
	assert.Equal(t, sum, m.bytes)
}

func TestRolesMemoBounds(t *testing.T) {
	tests := []struct {
		name     string
		convs    []string // run in order, each with texts
		texts    []string
		want     []string // conversations remembered at the end
		maxConvs int
		maxBytes int
	}{
		{
			name:     "the least recently used conversation goes first",
			convs:    []string{"a", "b", "a", "c"},
			texts:    []string{"hello", "world"},
			want:     []string{"a", "c"},
			maxConvs: 2, maxBytes: 1 << 20,
		},
		{
			name:     "bytes bound the memo",
			convs:    []string{"a", "b", "c"},
			texts:    []string{strings.Repeat("x", 40)},
			want:     []string{"b", "c"},
			maxConvs: 10, maxBytes: 100,
		},
		{
			name:     "a conversation over the byte bound alone is not kept",
			convs:    []string{"a", "b"},
			texts:    []string{strings.Repeat("x", 60), strings.Repeat("y", 60)},
			want:     []string{},
			maxConvs: 10, maxBytes: 100,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := newRolesMemo(tc.maxConvs, tc.maxBytes)
			for _, conv := range tc.convs {
				tx := memoTx(t, conv, tc.texts...)
				require.NoError(t, roles(tx, m))
				assert.Empty(t, tx.Pending())
				checkMemo(t, m)
			}
			got := []string{}
			for e := m.lru.Back(); e != nil; e = e.Prev() {
				got = append(got, e.Value.(*convTexts).conv)
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

// A Turn that shrinks gives back the bytes of the texts it lost.
func TestRolesMemoShrinks(t *testing.T) {
	m := newRolesMemo(10, 1<<20)
	require.NoError(t, roles(memoTx(t, "a", "one", "two", "three"), m))
	assert.Equal(t, 11, m.bytes)
	require.NoError(t, roles(memoTx(t, "a", "one"), m))
	assert.Equal(t, 3, m.bytes)
	assert.Len(t, m.convs["a"].clean, 1)
	checkMemo(t, m)
}
