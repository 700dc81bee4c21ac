package calls

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// countingStore is a MemStore that can read many keys at once, and counts
// its round trips.
type countingStore struct {
	*MemStore
	gets, batches int
}

func (s *countingStore) Get(ctx context.Context, key string) (string, bool, error) {
	s.gets++
	return s.MemStore.Get(ctx, key)
}

func (s *countingStore) GetMany(ctx context.Context, keys []string) (map[string]string, error) {
	s.batches++
	out := map[string]string{}
	for _, k := range keys {
		if v, ok, _ := s.MemStore.Get(ctx, k); ok {
			out[k] = v
		}
	}
	return out, nil
}

// A call whose history holds many model outputs no call recorded (an
// app's first call through the gateway) is looked up in two round trips,
// the longest state and then the others together, and still finds the
// longest recorded state among them.
func TestFindReadsEarlierStatesTogether(t *testing.T) {
	ctx := context.Background()
	var history []events.Block
	for i := range 300 {
		history = append(history, events.Block{Kind: events.KindUser, Text: fmt.Sprint("q", i)}, events.Block{Kind: events.KindLLMText, Text: fmt.Sprint("a", i)})
	}
	ask := append(history[:len(history):len(history)], events.Block{Kind: events.KindUser, Text: "now"})

	store := &countingStore{MemStore: NewMemStore(100)}
	x := NewThreads(store)
	_, _, ok, err := x.Find(ctx, "", ask, nil)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, 2, store.gets, "the longest state alone, and the longest without its reasoning")
	assert.Equal(t, 3, store.batches, "299 earlier states, 128 at a time")

	// Two earlier states recorded (a conversation forked twice): the
	// longer is found, and whether it is its conversation's latest.
	require.NoError(t, x.Record(ctx, "A", 7, "", history[:20], nil, Answer{}))
	require.NoError(t, x.Record(ctx, "B", 9, "", history[:400], nil, Answer{}))
	require.NoError(t, store.Put(ctx, map[string]string{stateKey(Chain(history[:500])[499]): "not a state"}))
	store.gets, store.batches = 0, 0
	ref, latest, ok, err := x.Find(ctx, "", ask, nil)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Ref{"B", 9}, ref, "the longest recorded state; an entry that is not one is passed over")
	assert.True(t, latest)
	assert.Equal(t, 1, store.batches, "found in the first batch")
	assert.Equal(t, 2, store.gets, "the longest state, then the latest call of its conversation")
}

// TestExtendChain: a call's state, its input's chain extended by its
// output, is the chain of the whole, and the input's chain is left alone.
func TestExtendChain(t *testing.T) {
	in := []events.Block{{Kind: events.KindSystem, Text: "s"}, {Kind: events.KindUser, Text: "q"}}
	out := []events.Block{{Kind: events.KindReasoning, Encrypted: "e"}, {Kind: events.KindLLMText, Text: "a"}}
	chain := Chain(in)
	before := slices.Clone(chain)
	keys := [][32]byte{Key(&out[0]), Key(&out[1])}
	got := ExtendChain(chain[:len(chain):len(chain)], keys)
	require.Equal(t, Chain(append(slices.Clone(in), out...)), got)
	require.Equal(t, before, chain)
	require.Equal(t, Chain(out), ExtendChain(nil, keys))
}

// TestMemStoreForgetsAConversation: forgetting a conversation removes the
// entries that name it (a state, its latest call, a response, an imported
// call, pending or not) and no other conversation's, whatever its name
// looks like (a conversation named like another's latest-call count).
func TestMemStoreForgetsAConversation(t *testing.T) {
	ctx := context.Background()
	s := NewMemStore(100)
	x := NewThreads(s)
	a := []events.Block{{Kind: events.KindUser, Text: "q"}, {Kind: events.KindLLMText, Text: "a"}}
	b := []events.Block{{Kind: events.KindUser, Text: "other"}, {Kind: events.KindLLMText, Text: "b"}}
	require.NoError(t, x.Record(ctx, "12", 4, "", a, nil, Answer{ResponseID: "resp_a"}))
	require.NoError(t, x.Record(ctx, "other", 12, "", b, nil, Answer{ResponseID: "resp_b"}))
	require.NoError(t, x.RecordImported(ctx, "k1", "12"))
	require.NoError(t, x.ImportPending(ctx, "k2", "12"))
	s.ForgetConversation("12")
	_, _, ok, err := x.Find(ctx, "", a, nil)
	require.NoError(t, err)
	assert.False(t, ok, "its state")
	_, _, ok, _ = x.Response(ctx, "resp_a")
	assert.False(t, ok, "its response")
	for _, k := range []string{"k1", "k2"} {
		_, _, ok, _ = x.Imported(ctx, k)
		assert.False(t, ok, "its imported call %s", k)
	}
	ref, latest, ok, err := x.Find(ctx, "", b, nil)
	require.NoError(t, err)
	assert.True(t, ok && latest, "the other conversation's state and latest call stay")
	assert.Equal(t, Ref{"other", 12}, ref)
	_, _, ok, _ = x.Response(ctx, "resp_b")
	assert.True(t, ok)
}

// TestFindCountsASystemBlockSentAgainOnce: a call whose input is a
// recorded state with its system block sent again in front continues
// that state; the same first call with its system block doubled finds
// nothing (a first call starts its own conversation), and a lookup of an
// input whose system blocks are all different costs nothing more.
func TestFindCountsASystemBlockSentAgainOnce(t *testing.T) {
	ctx := context.Background()
	sys := events.Block{Kind: events.KindSystem, Text: "be brief"}
	first := []events.Block{sys, {Kind: events.KindUser, Text: "one"}}
	state := append(first[:2:2], events.Block{Kind: events.KindLLMText, Text: "noted"})
	store := &countingStore{MemStore: NewMemStore(100)}
	x := NewThreads(store)
	require.NoError(t, x.Record(ctx, "A", 4, "", state, nil, Answer{}))

	doubled := append([]events.Block{sys}, append(state[:3:3], events.Block{Kind: events.KindUser, Text: "two"})...)
	ref, latest, ok, err := x.Find(ctx, "", doubled, nil)
	require.NoError(t, err)
	require.True(t, ok, "continues the state with its system block sent again")
	assert.Equal(t, Ref{"A", 4}, ref)
	assert.True(t, latest)

	_, _, ok, err = x.Find(ctx, "", append([]events.Block{sys}, first...), nil)
	require.NoError(t, err)
	assert.False(t, ok, "a first call with its system block doubled is a first call")

	other := append([]events.Block{{Kind: events.KindSystem, Text: "be kind"}}, append(state[:3:3], events.Block{Kind: events.KindUser, Text: "two"})...)
	store.gets, store.batches = 0, 0
	_, _, ok, err = x.Find(ctx, "", other, nil)
	require.NoError(t, err)
	assert.False(t, ok, "another system prompt in front is not the same one sent again")
	assert.Equal(t, 2, store.gets, "the longest state, and the longest without its reasoning: no more")
}
