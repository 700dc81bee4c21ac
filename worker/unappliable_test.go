package worker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// TestStepThatDoesNotApplyIsNamed: a stored message that decodes as a step
// but does not apply to the conversation (here a copy of its last step,
// stored by a writer that bypassed the log's fences) made every read fail
// with the fold's bare error, which readers took for a passing one (the
// HTTP API answered 500, "check that NATS is reachable"). Loading and
// replaying the conversation now fail with eventlog.ErrUnappliable,
// naming the message and what to do.
func TestStepThatDoesNotApplyIsNamed(t *testing.T) {
	l := startWorker(t, natstest.Start(t), nil)
	ctx := context.Background()
	_, err := ask(t, l, "g6", "hi")
	require.NoError(t, err)

	s, err := l.JetStream().Stream(ctx, l.Names().EventsStream)
	require.NoError(t, err)
	last, err := s.GetLastMsgForSubject(ctx, l.Names().EventsFilter("g6"))
	require.NoError(t, err)
	copied := nats.NewMsg(last.Subject)
	copied.Data = last.Data
	for k, v := range last.Header {
		if k != nats.MsgIdHdr && !strings.HasPrefix(k, "Nats-") {
			copied.Header[k] = v
		}
	}
	copied.Header.Set(nats.MsgIdHdr, "copied:0") // stored as a step would be
	_, err = l.JetStream().PublishMsg(ctx, copied)
	require.NoError(t, err)

	_, err = l.Load(ctx, "g6")
	require.ErrorIs(t, err, eventlog.ErrUnappliable)
	assert.ErrorContains(t, err, "do not apply to the conversation")

	var readErr error
	for _, err := range replay.Entries(ctx, l, "g6") {
		if err != nil {
			readErr = err
			break
		}
	}
	require.ErrorIs(t, readErr, eventlog.ErrUnappliable, "replay names the message too")
}
