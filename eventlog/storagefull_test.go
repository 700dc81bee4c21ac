package eventlog_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/storagetest"
)

// Issue 24: on a small store the default reservations (1 GiB of requests,
// 256 MiB of dead letters) kept the log from opening at all; with its
// storage budget it opens and keeps most of the store for conversations.
func TestSmallStoreOpens(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(16<<20))
	_, err := eventlog.Open(context.Background(), srv.Conn)
	require.ErrorIs(t, err, eventlog.ErrStorageFull, "the default reservations do not fit in 16 MiB")
	assert.ErrorContains(t, err, "raise --max-store")

	l, err := eventlog.Open(context.Background(), srv.Conn, eventlog.WithStorageBudget(16<<20))
	require.NoError(t, err)
	ai, err := l.JetStream().AccountInfo(context.Background())
	require.NoError(t, err)
	req, dead := eventlog.Reservations(16 << 20)
	assert.Equal(t, uint64(req+dead), ai.ReservedStore)
	assert.LessOrEqual(t, ai.ReservedStore, uint64(16<<20)*5/16)

	_, err = eventlog.Open(context.Background(), srv.Conn, eventlog.WithStorageBudget(1<<20))
	assert.ErrorContains(t, err, "at least 8 MiB")
}

// When JetStream's storage is full every write says so, and writes resume
// as soon as space is freed, without a restart.
func TestStorageFullIsNamedAndPasses(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)

	_, err = storagetest.Fill(t, l)
	assert.ErrorContains(t, err, "JetStream storage is full: ")
	assert.ErrorContains(t, err, "free space")
	assert.ErrorContains(t, err, "raise --max-store")

	_, err = l.PublishRequest(ctx, l.Names().ChatSubject("other"), []byte(`{"text":"hi"}`), "req1")
	assert.ErrorIs(t, err, eventlog.ErrStorageFull, "the door refuses new requests with the cause")
	err = l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: "x", Reason: "test", Data: []byte("x")})
	assert.ErrorIs(t, err, eventlog.ErrStorageFull)

	storagetest.Free(t, l, 0)
	_, err = l.Append(ctx, "after", 0, events.New("after", "r1", 0, "test", events.UserAppended{BlockID: "b", Text: "hello"}))
	assert.NoError(t, err, "space freed: writes pass again")
}

// A log opened without a budget (a worker, a command) leaves the byte
// limits serve fitted to the store as they are: putting back the defaults
// would reserve more than the store holds.
func TestBudgetStays(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(16<<20))
	ctx := context.Background()
	_, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(16<<20))
	require.NoError(t, err)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	req, dead := eventlog.Reservations(16 << 20)
	for name, want := range map[string]int64{l.Names().RequestsStream: req, l.Names().DeadLettersStream: dead} {
		s, err := l.JetStream().Stream(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, want, s.CachedInfo().Config.MaxBytes, name)
	}
}

// A budget never lowers an existing stream's limit: the stream would drop
// what it holds past the new one. It raises a lower one.
func TestBudgetNeverLowers(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(64<<20))
	ctx := context.Background()
	_, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(32<<20))
	require.NoError(t, err)
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(16<<20))
	require.NoError(t, err)
	limit := func() int64 {
		s, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
		require.NoError(t, err)
		return s.CachedInfo().Config.MaxBytes
	}
	req32, _ := eventlog.Reservations(32 << 20)
	assert.Equal(t, req32, limit(), "not lowered")
	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(48<<20))
	require.NoError(t, err)
	req48, _ := eventlog.Reservations(48 << 20)
	assert.Equal(t, req48, limit(), "raised")
}

// TestEraseFreesAFullStore: erasing is how docs/storage.md and every
// "storage is full" message say to free space, but erase first writes its
// note in the threading index, which a full store refused: erase failed,
// nothing was freed, and only a restart with a larger --max-store helped.
// It now erases, and notes the erasure once the events are gone.
func TestEraseFreesAFullStore(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)
	_, err = l.Threads(ctx) // the index exists, as once a gateway ran
	require.NoError(t, err)
	_, err = storagetest.Fill(t, l)
	require.ErrorIs(t, err, eventlog.ErrStorageFull)

	got, err := l.Erase(ctx, storagetest.Filler)
	require.NoError(t, err, "erase frees a full store")
	assert.NotZero(t, got.Messages)
	n, err := l.LastSeq(ctx, storagetest.Filler)
	require.NoError(t, err)
	assert.Zero(t, n)
	erased, err := l.ErasedAfter(ctx, storagetest.Filler, time.Now().Add(-time.Hour))
	require.NoError(t, err)
	assert.True(t, erased, "the erasure is noted, after the events went")
	_, err = l.Append(ctx, "after", 0, events.New("after", "r1", 0, "test", events.UserAppended{BlockID: "b", Text: "hello"}))
	assert.NoError(t, err, "space freed: writes pass again")
}
