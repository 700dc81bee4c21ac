package worker

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// TestEndLastDelivery: a request that would be retried but is on its last
// delivery (JetStream will not deliver it again) ends all the same: as
// request.failed in its conversation, with the user's text and the cause,
// or, when the conversation takes no write (its stream is sealed here), as
// a dead letter saying both. Either way it leaves the requests stream.
// Reaching the last delivery through the consumer takes MaxDeliver +
// LostDeliveries deliveries, so the test hands endLastDelivery a request
// fetched from the requests stream by a consumer of its own.
func TestEndLastDelivery(t *testing.T) {
	tests := []struct {
		name   string
		sealed bool
	}{
		{"request.failed in the conversation", false},
		{"a dead letter when the conversation takes no write", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w, l, ctx := idleWorker(t)
			if tc.sealed {
				s, err := l.JetStream().Stream(ctx, l.Names().EventsStreamOf("last"))
				require.NoError(t, err)
				cfg := s.CachedInfo().Config
				cfg.Sealed = true
				_, err = l.JetStream().UpdateStream(ctx, cfg)
				require.NoError(t, err)
			}
			req, err := Send(ctx, l, Request{Conversation: "last", Text: "anyone?"})
			require.NoError(t, err)

			c, err := l.JetStream().CreateConsumer(ctx, l.Names().RequestsStream, jetstream.ConsumerConfig{AckPolicy: jetstream.AckExplicitPolicy})
			require.NoError(t, err)
			batch, err := c.Fetch(1, jetstream.FetchMaxWait(10*time.Second))
			require.NoError(t, err)
			m := <-batch.Messages()
			require.NotNil(t, m, "the request is delivered")
			meta, err := m.Metadata()
			require.NoError(t, err)
			parsed, problem := parseRequest(m.Data(), "last", meta.Sequence.Stream, meta.Timestamp, DefaultMaxTextBytes)
			require.Empty(t, problem)
			require.Equal(t, req.RequestID, parsed.RequestID)

			w.endLastDelivery(ctx, m, meta, parsed, errors.New("the log did not answer"))

			if tc.sealed {
				dead, err := l.DeadLetters(ctx, 10)
				require.NoError(t, err)
				require.Len(t, dead, 1)
				assert.Equal(t, l.Names().ChatSubject("last"), dead[0].Subject)
				assert.Contains(t, dead[0].Reason, "gave up after 1 deliveries: the log did not answer")
				assert.Contains(t, dead[0].Reason, "request.failed could not be stored either")
				assert.JSONEq(t, string(m.Data()), string(dead[0].Data), "the request is kept as sent")
				n, err := l.LastSeq(ctx, "last")
				require.NoError(t, err)
				assert.Zero(t, n)
			} else {
				types, reason := requestEnd(t, l, "last", req.RequestID)
				assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeRequestFailed}, types, "the user's text is kept beside the reason")
				assert.Equal(t, "gave up after 1 deliveries: the log did not answer", reason)
				dead, err := l.DeadLetters(ctx, 10)
				require.NoError(t, err)
				assert.Empty(t, dead)
			}
			s, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
			require.NoError(t, err)
			info, err := s.Info(ctx)
			require.NoError(t, err)
			assert.Zero(t, info.State.Msgs, "the request left the requests stream")
		})
	}
}

// requestEnd returns the types of conv's events, each of which must be
// request id's, and the reason of its request.failed ("" for none).
func requestEnd(t *testing.T, l *eventlog.Log, conv, id string) (types []events.Type, reason string) {
	t.Helper()
	for rec, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		assert.Equal(t, id, rec.Cause)
		types = append(types, rec.Type)
		if p, ok := rec.Payload.(events.RequestFailed); ok {
			reason = p.Reason
		}
	}
	return types, reason
}
