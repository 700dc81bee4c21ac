package check

import (
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// fedOf returns a Fed of conv fed one user message of size bytes.
func fedOf(t *testing.T, conv string, size int) *Fed {
	t.Helper()
	f := &Fed{Conversation: conv, Checker: New()}
	_, err := f.Feed(events.New(conv, "r", 0, "app", events.UserAppended{BlockID: "u", Text: strings.Repeat("x", size)}))
	require.NoError(t, err)
	return f
}

// TestCacheIsBoundedByBytes: the checkers of the conversations a process
// records hold their Turns, so they are bounded by the memory they hold,
// not by their number: the least recently put go first, and one larger
// than the bound is not kept at all.
func TestCacheIsBoundedByBytes(t *testing.T) {
	cs := NewCache(10_000)
	cs.Put(fedOf(t, "a", 4000))
	cs.Put(fedOf(t, "b", 4000))
	assert.LessOrEqual(t, cs.Bytes(), 10_000)
	cs.Put(fedOf(t, "c", 4000)) // a goes
	assert.Nil(t, cs.Take("a"))
	b := cs.Take("b")
	require.NotNil(t, b, "b was put more recently than a")
	assert.Equal(t, 1, b.Events)
	cs.Put(b)
	cs.Put(fedOf(t, "huge", 20_000))
	assert.Nil(t, cs.Take("huge"), "larger than the bound alone: not kept")
	assert.NotNil(t, cs.Take("c"))
	assert.NotNil(t, cs.Take("b"))
	assert.Zero(t, cs.Bytes(), "every byte accounted for")
}

// TestCacheKeepsTheFedThatSawMore: two calls of one conversation each
// put back their Fed; the one fed more events stays.
func TestCacheKeepsTheFedThatSawMore(t *testing.T) {
	cs := NewCache(1 << 20)
	more := fedOf(t, "a", 10)
	_, err := more.Feed(events.New("a", "r", 1, "app", events.UserAppended{BlockID: "u2", Text: "again"}))
	require.NoError(t, err)
	cs.Put(more)
	cs.Put(fedOf(t, "a", 10))
	assert.Equal(t, 2, cs.Take("a").Events)
}

func eventsOf(evs ...events.Event) iter.Seq2[events.Event, error] {
	return func(yield func(events.Event, error) bool) {
		for _, e := range evs {
			if !yield(e, nil) {
				return
			}
		}
	}
}

// TestRebuildReadsNoFurtherThanAsked: a rebuilt checker is fed the
// conversation's first n events, and a log that holds fewer, or that
// cannot be read, is an error naming the conversation.
func TestRebuildReadsNoFurtherThanAsked(t *testing.T) {
	e1 := events.New("a", "r", 0, "app", events.UserAppended{BlockID: "u1", Text: "one"})
	e2 := events.New("a", "r", 1, "app", events.UserAppended{BlockID: "u2", Text: "two"})
	f, err := Rebuild("a", 1, eventsOf(e1, e2))
	require.NoError(t, err)
	assert.Equal(t, 1, f.Events)
	f, err = Rebuild("a", 0, nil)
	require.NoError(t, err)
	assert.Zero(t, f.Events)
	_, err = Rebuild("a", 3, eventsOf(e1, e2))
	assert.ErrorContains(t, err, "holds 2 events before the call, not 3")
	broken := func(yield func(events.Event, error) bool) { yield(events.Event{}, errors.New("disk gone")) }
	_, err = Rebuild("a", 1, broken)
	assert.ErrorContains(t, err, "check a: disk gone")
}

// TestObservingFedCountsItsTexts: a Fed fed through Observe keeps no
// Turn, but the texts of the input it last saw are counted in its size,
// so a cache of them stays bounded when the caller's Turn is let go.
func TestObservingFedCountsItsTexts(t *testing.T) {
	turn := projector.New("a")
	f := &Fed{Conversation: "a", Checker: New()}
	for _, e := range []events.Event{
		events.New("a", "r", 0, "app", events.UserAppended{BlockID: "u", Text: strings.Repeat("x", 50_000)}),
		events.New("a", "r", 0, "engine", events.InferenceStarted{InferenceID: "i", Model: "m", InputHash: "h"}),
	} {
		require.NoError(t, projector.Apply(turn, e))
		f.Observe(e, turn)
	}
	assert.Greater(t, f.Checker.Size(), 50_000)
	cs := NewCache(40_000)
	cs.Put(f)
	assert.Nil(t, cs.Take("a"), "larger than the bound: not kept")
}
