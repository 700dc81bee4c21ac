package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
)

// The suite's case on the check an append makes when the server says its
// step was stored before (see TestSuite).
func init() {
	suiteCases = append(suiteCases, struct {
		name string
		run  func(t *testing.T, s *suiteLog)
		skip map[string]string
	}{"a duplicate is checked on the stream not a mirror", duplicateCheckedOnTheStream, nil})
}

// duplicateCheckedOnTheStream: when the server acknowledges an append as a
// duplicate of a stored message, the append reads that message to tell a
// retry of its own step from a cause reused in another conversation. Read
// by a direct get, the answer may come from a mirror made with
// mirror_direct (or, on a cluster, from a replica that has not applied the
// message yet: seen in CI in TestSuite/r3-3shards/retried_step_is_stored_once
// as "checking duplicate step ...: message not found"), which does not hold
// it: the append failed with an error that said nothing of the conversation
// or the cause. Each round's duplicate check is answered by the mirror or
// by the stream at random; twelve rounds leave the mirror out with a
// chance of 1 in 4096.
func duplicateCheckedOnTheStream(t *testing.T, s *suiteLog) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	owner := s.id("owner")
	other := sameStream(s, "other", owner)
	decoyMirror(t, ctx, s, "DUP", owner)

	var seq uint64
	var err error
	for i := range 12 {
		cause := s.id(fmt.Sprintf("req%d", i))
		seq, err = s.log.Append(ctx, owner, seq, user(owner, cause, 0, fmt.Sprintf("hello %d", i)))
		require.NoError(t, err)
		_, err = s.log.Append(ctx, other, 0, user(other, cause, 0, "the same request ID, another conversation"))
		require.ErrorIs(t, err, eventlog.ErrCauseReused, "round %d", i)
		assert.Contains(t, err.Error(), owner, "round %d: the error names the conversation that holds the step", i)
	}
	turn, err := s.log.Load(ctx, other)
	require.NoError(t, err)
	assert.Zero(t, turn.Events, "nothing was stored in the other conversation")
}

func init() {
	suiteCases = append(suiteCases, struct {
		name string
		run  func(t *testing.T, s *suiteLog)
		skip map[string]string
	}{"holds is answered by the stream not a mirror", holdsAnsweredByTheStream, nil})
}

// holdsAnsweredByTheStream: Holds tells a writer whose append was refused
// whether the conversation moved on (reload, go on) or was erased under it
// (write nothing more). Read by a direct get, a mirror made with
// mirror_direct that never copied the conversation (or, on a cluster, a
// replica that had not applied the message yet) answered "not found", and
// Holds said the conversation was erased: the gateway then dropped a
// call's outcome it should have recorded.
func holdsAnsweredByTheStream(t *testing.T, s *suiteLog) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	conv := s.id("c")
	decoyMirror(t, ctx, s, "HOLDS", conv)

	var err error
	var seq uint64
	for i := range 12 {
		seq, err = s.log.Append(ctx, conv, seq, user(conv, s.id(fmt.Sprintf("r%d", i)), 0, fmt.Sprintf("hello %d", i)))
		require.NoError(t, err)
		held, err := s.log.Holds(ctx, conv, seq)
		require.NoError(t, err)
		assert.True(t, held, "round %d: the conversation holds the message just appended", i)
	}
	_, err = s.log.Erase(ctx, conv)
	require.NoError(t, err)
	held, err := s.log.Holds(ctx, conv, seq)
	require.NoError(t, err)
	assert.False(t, held, "erased")
}
