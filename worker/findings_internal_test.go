package worker

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
)

// checkerOf returns a checker fed one user message of size bytes.
func checkerOf(t *testing.T, conv string, size int) *fedChecker {
	t.Helper()
	c := &fedChecker{conv: conv, c: check.New()}
	_, err := c.c.Feed(events.New(conv, "r", 0, "app", events.UserAppended{BlockID: "u", Text: strings.Repeat("x", size)}))
	require.NoError(t, err)
	c.n = 1
	return c
}

// TestCheckersAreBoundedByBytes: a worker's checkers hold their
// conversations' Turns, so they are bounded by the memory they hold, not
// by their number: the least recently used go first, and one larger than
// the bound is not kept at all.
func TestCheckersAreBoundedByBytes(t *testing.T) {
	cs := newCheckers(10_000)
	cs.put(checkerOf(t, "a", 4000))
	cs.put(checkerOf(t, "b", 4000))
	assert.LessOrEqual(t, cs.bytes, int64(10_000))
	cs.put(checkerOf(t, "c", 4000)) // a goes
	assert.Nil(t, cs.take("a"))
	b := cs.take("b")
	require.NotNil(t, b, "b was used more recently than a")
	assert.Equal(t, 1, b.n)
	cs.put(b)
	cs.put(checkerOf(t, "huge", 20_000))
	assert.Nil(t, cs.take("huge"), "larger than the bound alone: not kept")
	assert.NotNil(t, cs.take("c"))
	assert.NotNil(t, cs.take("b"))
	assert.Zero(t, cs.bytes, "every byte accounted for")
}
