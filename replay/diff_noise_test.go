package replay_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// TestDiffDuplicatesWithoutNoise: repeated questions and answers are a
// conversation, not duplicates; a system prompt twice, a history sent
// twice and an ID twice are faults, and reported.
func TestDiffDuplicatesWithoutNoise(t *testing.T) {
	same := turn(sys("S", "echo"),
		user("u1", "same again"), llm("l1", "You said: same again"),
		user("u2", "same again"), llm("l2", "You said: same again"),
		user("u3", "same again"), llm("l3", "You said: same again"),
		user("u4", "ok?"), reasoning("r4"), llm("l4", "OK"),
		user("u5", "and?"), reasoning("r5"), llm("l5", "OK"))
	r := replay.Diff(same, same)
	assert.Empty(t, r.Duplicates, "three identical questions with identical answers, repeated short answers and reasoning are no duplicates")
	assert.True(t, r.Equal())

	t.Run("a flattened history sent twice", func(t *testing.T) {
		b := turn(sys("S", "be brief"), user("u1", "hi"), llm("l1", "hello"), user("u2", "how are you?"), llm("l2", "fine"),
			user("x1", "hi"), llm("x2", "hello"), user("x3", "how are you?"), llm("x4", "fine"), user("u3", "recap"))
		r := replay.Diff(nil, b)
		require.Len(t, r.Duplicates, 1)
		d := r.Duplicates[0]
		assert.Equal(t, "run", d.By)
		assert.Equal(t, replay.SideB, d.Side)
		assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8}, d.Indexes)
		assert.Equal(t, []string{"u1", "l1", "u2", "l2", "x1", "x2", "x3", "x4"}, d.IDs)
	})
	t.Run("two system blocks with one text", func(t *testing.T) {
		r := replay.Diff(nil, turn(sys("S", "be brief"), user("u1", "hi"), sys("D", "be brief")))
		require.Len(t, r.Duplicates, 1)
		assert.Equal(t, "content", r.Duplicates[0].By)
		assert.Equal(t, []string{"S", "D"}, r.Duplicates[0].IDs)
	})
	t.Run("the same ID twice, whatever its kind", func(t *testing.T) {
		r := replay.Diff(nil, turn(user("u1", "OK"), llm("l1", "OK"), llm("l1", "OK")))
		require.Len(t, r.Duplicates, 1)
		assert.Equal(t, "id", r.Duplicates[0].By)
	})
}
