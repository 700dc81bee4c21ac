package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestRequestsStreamHasLimits: the requests stream is bounded in age,
// bytes and requests per conversation, and an installation made before
// the limits existed gets them at its next Open, its pending requests
// kept.
func TestRequestsStreamHasLimits(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	names := eventlog.NamesFor(eventlog.DefaultPrefix)
	js, err := jetstream.New(srv.Conn)
	require.NoError(t, err)
	// The stream as turnlog created it before it had limits.
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{
		Name: names.RequestsStream, Subjects: []string{names.ChatWildcard()},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		SubjectTransform: &jetstream.SubjectTransformConfig{Source: names.ChatWildcard(),
			Destination: fmt.Sprintf("%s.chat.{{partition(%d,1)}}.{{wildcard(1)}}", names.Prefix, eventlog.DefaultPartitions)},
	})
	require.NoError(t, err)
	_, err = js.Publish(ctx, names.ChatSubject("pending"), []byte(`{"text":"still here"}`))
	require.NoError(t, err)

	limits := eventlog.RequestLimits{MaxAge: time.Hour, MaxBytes: 8 << 20, MaxPerConversation: 3}
	l := openLog(t, srv, eventlog.WithRequestLimits(limits))
	s, err := js.Stream(ctx, names.RequestsStream)
	require.NoError(t, err)
	cfg := s.CachedInfo().Config
	assert.Equal(t, time.Hour, cfg.MaxAge)
	assert.Equal(t, int64(8<<20), cfg.MaxBytes)
	assert.Equal(t, int64(3), cfg.MaxMsgsPerSubject)
	assert.Equal(t, jetstream.DiscardNew, cfg.Discard, "a full stream refuses new requests, it never drops stored ones")
	assert.True(t, cfg.DiscardNewPerSubject)
	assert.Equal(t, uint64(1), s.CachedInfo().State.Msgs, "the upgrade kept the pending request")

	for i := 0; i < 3; i++ {
		_, err = js.Publish(ctx, names.ChatSubject("busy"), []byte(`{"text":"hi"}`))
		require.NoError(t, err, "request %d", i)
	}
	_, err = js.Publish(ctx, names.ChatSubject("busy"), []byte(`{"text":"one too many"}`))
	require.Error(t, err, "the fourth pending request of a conversation is refused to its sender")
	_, err = js.Publish(ctx, names.ChatSubject("other"), []byte(`{"text":"hi"}`))
	require.NoError(t, err, "other conversations are not affected")

	// Defaults, on a fresh installation, and a second Open changes nothing.
	srv2 := natstest.Start(t)
	openLog(t, srv2)
	l2 := openLog(t, srv2)
	s2, err := l2.JetStream().Stream(ctx, names.RequestsStream)
	require.NoError(t, err)
	cfg2 := s2.CachedInfo().Config
	assert.Equal(t, eventlog.DefaultRequestLimits.MaxAge, cfg2.MaxAge)
	assert.Equal(t, eventlog.DefaultRequestLimits.MaxBytes, cfg2.MaxBytes)
	assert.Equal(t, eventlog.DefaultRequestLimits.MaxPerConversation, cfg2.MaxMsgsPerSubject)
	_ = l
}

// TestPublishRequest: a request is stored once however often it is sent
// with the same message ID, and a request the stream's limits refuse comes
// back as JetStream's own error, which the sender can tell apart.
func TestPublishRequest(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv, eventlog.WithRequestLimits(eventlog.RequestLimits{MaxAge: time.Hour, MaxBytes: 8 << 20, MaxPerConversation: 2}))
	subject := l.Names().ChatSubject("pub")
	first, err := l.PublishRequest(ctx, subject, []byte(`{"text":"hi"}`), "01J00000000000000000000001")
	require.NoError(t, err)
	again, err := l.PublishRequest(ctx, subject, []byte(`{"text":"hi"}`), "01J00000000000000000000001")
	require.NoError(t, err)
	assert.Equal(t, first, again, "a re-send is the same request")
	_, err = l.PublishRequest(ctx, subject, []byte(`{"text":"two"}`), "01J00000000000000000000002")
	require.NoError(t, err)

	_, err = l.PublishRequest(ctx, subject, []byte(`{"text":"three"}`), "01J00000000000000000000003")
	var apiErr *jetstream.APIError
	require.ErrorAs(t, err, &apiErr, "the third pending request of the conversation is refused")
	assert.Equal(t, jetstream.ErrorCode(10077), apiErr.ErrorCode)

	s, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), info.State.Msgs)
}
