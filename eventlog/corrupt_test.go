package eventlog_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestCorruptMessagesAreNamed: a message on a conversation's subject that
// is not one of its steps (garbage, or another conversation's step) makes
// every read fail with a *CorruptMessageError naming its sequence, size
// and reason; Events names it and goes on past it when asked to, and
// Last still gives its sequence.
func TestCorruptMessagesAreNamed(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	seq, err := l.Append(ctx, "c", 0, user("c", "r0", 0, "fine"))
	require.NoError(t, err)
	// Damaged steps: turnlog's headers, bytes that are not a step of c.
	other, err := events.Encode(user("elsewhere", "r9", 0, "not yours"))
	require.NoError(t, err)
	badSeq := garbage(t, l, "c", []byte("garbage"))
	wrong := garbage(t, l, "c", other)
	_, err = l.Append(ctx, "c", wrong, user("c", "r1", 0, "after"))
	require.NoError(t, err)

	_, err = l.Load(ctx, "c")
	var bad *eventlog.CorruptMessageError
	require.ErrorAs(t, err, &bad)
	assert.ErrorIs(t, err, eventlog.ErrCorruptMessage)
	assert.ErrorIs(t, err, events.ErrInvalid, "the decoding error is kept")
	assert.Equal(t, badSeq, bad.Seq)
	assert.Equal(t, len("garbage"), bad.Size)
	assert.Contains(t, err.Error(), "turnlog repair --yes c", "the error says what to do")

	var texts []string
	var quarantined []uint64
	for rec, err := range l.Events(ctx, "c") {
		if errors.As(err, &bad) {
			quarantined = append(quarantined, bad.Seq)
			continue
		}
		require.NoError(t, err)
		texts = append(texts, rec.Payload.(events.UserAppended).Text)
	}
	assert.Equal(t, []uint64{badSeq, wrong}, quarantined)
	assert.Equal(t, []string{"fine", "after"}, texts, "the steps around them are read")

	// A corrupt last message: Last says which, and where.
	garbage(t, l, "d", []byte{0xc1})
	tail, err := l.Last(ctx, "d")
	assert.ErrorIs(t, err, eventlog.ErrCorruptMessage)
	assert.NotZero(t, tail.Seq)
	assert.False(t, tail.Stored.IsZero())
	_ = seq
}
