package eventlog_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestPublishRequestTellsDuplicatesApart: JetStream drops every request
// whose ID it saw within the duplicate window, whatever the conversation.
// PublishRequest accepts the drop for a re-send to the request's own
// conversation and refuses it (RequestIDReusedError, matching
// ErrCauseReused) for another one, naming the owner when the requests
// stream or the request IDs bucket knows it; it used to return nil for
// both, and the second request vanished.
func TestPublishRequestTellsDuplicatesApart(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	subject := l.Names().ChatSubject
	reqs, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	// answered stands for a worker: the request's events are stored, and
	// the request leaves the queue.
	answered := func(t *testing.T, conv, id string, seq uint64) {
		last, err := l.LastSeq(ctx, conv)
		require.NoError(t, err)
		_, err = l.Append(ctx, conv, last, user(conv, id, 0, "hello"))
		require.NoError(t, err)
		require.NoError(t, reqs.DeleteMsg(ctx, seq))
	}
	tests := []struct {
		name  string
		setup func(t *testing.T, id string, seq uint64)
		owner string // what the refusal names
	}{
		{"queued", func(*testing.T, string, uint64) {}, "owner"},
		{"answered", func(t *testing.T, id string, seq uint64) { answered(t, "owner", id, seq) }, ""},
		{"answered, claimed through the API", func(t *testing.T, id string, seq uint64) {
			require.NoError(t, l.ClaimRequestID(ctx, id, "owner"))
			answered(t, "owner", id, seq)
		}, "owner"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := ulid.Make().String()
			first, err := l.PublishRequest(ctx, subject("owner"), []byte(`{"text":"hello"}`), id)
			require.NoError(t, err)
			tc.setup(t, id, first)

			_, err = l.PublishRequest(ctx, subject("thief"), []byte(`{"text":"hello"}`), id)
			require.ErrorIs(t, err, eventlog.ErrCauseReused)
			var reused *eventlog.RequestIDReusedError
			require.ErrorAs(t, err, &reused)
			assert.Equal(t, eventlog.RequestIDReusedError{RequestID: id, Conversation: "thief", Owner: tc.owner}, *reused)
			assert.Contains(t, err.Error(), "fresh request_id")

			again, err := l.PublishRequest(ctx, subject("owner"), []byte(`{"text":"hello"}`), id)
			require.NoError(t, err, "a re-send to its own conversation")
			assert.Equal(t, first, again, "stored once")
		})
	}
	n, err := l.LastSeq(ctx, "thief")
	require.NoError(t, err)
	assert.Zero(t, n)
	_, err = reqs.GetLastMsgForSubject(ctx, l.Names().Prefix+".chat.*.thief")
	assert.ErrorIs(t, err, jetstream.ErrMsgNotFound, "nothing was queued for the other conversation")
}

// TestReleaseRequestID: a claim made for a request that was then refused
// (the ID belonged to another conversation) moves to that conversation, or
// goes when it is unknown; a claim of a third conversation stays.
func TestReleaseRequestID(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)

	moved := ulid.Make().String()
	require.NoError(t, l.ClaimRequestID(ctx, moved, "thief"))
	require.NoError(t, l.ReleaseRequestID(ctx, moved, "thief", "owner"))
	assert.NoError(t, l.ClaimRequestID(ctx, moved, "owner"), "the owner's re-send")
	assert.ErrorIs(t, l.ClaimRequestID(ctx, moved, "thief"), eventlog.ErrCauseReused)

	removed := ulid.Make().String()
	require.NoError(t, l.ClaimRequestID(ctx, removed, "thief"))
	require.NoError(t, l.ReleaseRequestID(ctx, removed, "thief", ""))
	assert.NoError(t, l.ClaimRequestID(ctx, removed, "owner"), "the claim is gone")

	kept := ulid.Make().String()
	require.NoError(t, l.ClaimRequestID(ctx, kept, "third"))
	require.NoError(t, l.ReleaseRequestID(ctx, kept, "thief", "owner"))
	assert.ErrorIs(t, l.ClaimRequestID(ctx, kept, "owner"), eventlog.ErrCauseReused, "another conversation's claim stays")
	require.NoError(t, l.ReleaseRequestID(ctx, ulid.Make().String(), "thief", ""), "no claim: nothing to do")
}
