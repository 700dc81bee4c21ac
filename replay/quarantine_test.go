package replay_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/replay"
)

// TestTimelineShowsQuarantinedMessages: a message on the conversation's
// subject that does not decode is shown in the timeline where it is, as
// quarantined with its sequence and reason, and the events after it are
// still replayed; a read that must fold it (At, Verify) fails naming it.
func TestTimelineShowsQuarantinedMessages(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	c := newConvo(t, l, "q")
	c.request(promptLoop(t, "be brief"), "hello", nil)
	ack, err := l.JetStream().Publish(ctx, l.Names().EventsSubject("q"), []byte("garbage"))
	require.NoError(t, err)
	c.turn.Seq = ack.Sequence // a writer that appends after it
	c.request(promptLoop(t, "be brief"), "again", nil)

	h, err := replay.Timeline(ctx, l, "q")
	require.NoError(t, err)
	var quarantined []replay.Entry
	last := 0
	for i, e := range h.Events {
		if e.Quarantined != nil {
			quarantined = append(quarantined, e)
			assert.Greater(t, i, 0)
			assert.Less(t, i, len(h.Events)-1, "in its place, between the requests")
			continue
		}
		assert.Equal(t, last+1, e.N, "positions count events only")
		last = e.N
	}
	require.Len(t, quarantined, 1)
	q := quarantined[0]
	assert.Equal(t, replay.TypeQuarantined, q.Type)
	assert.Equal(t, ack.Sequence, q.Seq)
	assert.Equal(t, ack.Sequence, q.Quarantined.Seq)
	assert.Equal(t, len("garbage"), q.Quarantined.Size)
	assert.NotEmpty(t, q.Quarantined.Reason)
	assert.Contains(t, q.Summary, "turnlog repair q --yes")
	assert.Equal(t, 2, h.Inferences, "both requests' model calls are replayed")

	_, err = replay.At(ctx, l, "q", 1)
	assert.ErrorIs(t, err, eventlog.ErrCorruptMessage)
	v, err := replay.Verify(ctx, l, "q")
	require.NoError(t, err)
	require.NotEmpty(t, v.Mismatches, "verify does not pass over it")
	assert.Contains(t, v.Mismatches[len(v.Mismatches)-1].Message, fmt.Sprintf("message %d", ack.Sequence))
}
