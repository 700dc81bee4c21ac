package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
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
	// turnlog's headers, bytes that do not decode: a damaged step.
	published := time.Now()
	ack, err := l.JetStream().Publish(ctx, l.Names().EventsSubject("q"), []byte("garbage"), jetstream.WithMsgID("damaged:0"))
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
	assert.WithinDuration(t, published, q.Time, time.Minute, "the entry says when the stream stored the message")
	assert.Equal(t, ack.Sequence, q.Quarantined.Seq)
	assert.Equal(t, len("garbage"), q.Quarantined.Size)
	assert.NotEmpty(t, q.Quarantined.Reason)
	assert.Contains(t, q.Summary, "turnlog repair --yes q")
	assert.Equal(t, 2, h.Inferences, "both requests' model calls are replayed")

	_, err = replay.At(ctx, l, "q", 1)
	assert.ErrorIs(t, err, eventlog.ErrCorruptMessage)
	v, err := replay.Verify(ctx, l, "q")
	require.NoError(t, err)
	require.NotEmpty(t, v.Mismatches, "verify does not pass over it")
	assert.Contains(t, v.Mismatches[len(v.Mismatches)-1].Message, fmt.Sprintf("message %d", ack.Sequence))
}

// TestTimelineShowsForeignMessages: what turnlog did not write (a NATS
// reply the server stored on the conversation's subject: no headers) is
// shown in the timeline where it is, as foreign and ignored, and no read
// stops at it: At, Verify and the totals line go on as if it were not
// there, and Describe counts it.
func TestTimelineShowsForeignMessages(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	c := newConvo(t, l, "f")
	c.request(promptLoop(t, "be brief"), "hello", nil)
	published := time.Now()
	ack, err := l.JetStream().PublishMsg(ctx, &nats.Msg{Subject: l.Names().EventsRoleSubject("f", "admin"), Data: []byte(`{"stream":"TURNLOG_REQUESTS","seq":3}`)})
	require.NoError(t, err)
	c.turn.Seq = ack.Sequence // the next append expects it
	c.request(promptLoop(t, "be brief"), "again", nil)

	h, err := replay.Timeline(ctx, l, "f")
	require.NoError(t, err)
	var foreign []replay.Entry
	last := 0
	for _, e := range h.Events {
		if e.Foreign != nil {
			foreign = append(foreign, e)
			continue
		}
		assert.Equal(t, last+1, e.N, "positions count events only")
		last = e.N
	}
	require.Len(t, foreign, 1)
	f := foreign[0]
	assert.Equal(t, replay.TypeForeign, f.Type)
	assert.Equal(t, ack.Sequence, f.Foreign.Seq)
	assert.Equal(t, l.Names().EventsRoleSubject("f", "admin"), f.Foreign.Subject)
	assert.WithinDuration(t, published, f.Time, time.Minute, "the entry says when the stream stored the message")
	assert.Contains(t, f.Summary, fmt.Sprintf("message %d: not written by turnlog (a NATS reply or another client's publish), ignored", ack.Sequence))
	assert.Equal(t, 2, h.Inferences)

	var text bytes.Buffer
	require.NoError(t, replay.WriteTimeline(&text, "f", replay.Entries(ctx, l, "f")))
	assert.Contains(t, text.String(), "1 foreign message (not written by turnlog) ignored")
	var js bytes.Buffer
	require.NoError(t, replay.WriteTimelineJSON(&js, "f", replay.Entries(ctx, l, "f")))
	assert.Contains(t, js.String(), `"type": "foreign"`)

	_, err = replay.At(ctx, l, "f", last)
	require.NoError(t, err)
	v, err := replay.Verify(ctx, l, "f")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%+v", v.Mismatches)

	conv := replay.Conversation{ID: "f"}
	require.NoError(t, replay.Describe(ctx, l, &conv))
	assert.Equal(t, 1, conv.Foreign)
	assert.Equal(t, 0, conv.Quarantined)
	assert.Equal(t, last, conv.Events)
}
