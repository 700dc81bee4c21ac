package eventlog_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// writers lists who wrote each event of conv, as Events reports it.
func writers(t *testing.T, l *eventlog.Log, conv string) []string {
	t.Helper()
	var out []string
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		out = append(out, r.Writer)
	}
	return out
}

// TestStepsRecordTheirWriter: each writing role's steps are stored on its
// own subject, which the reads report as the step's writer; a plain NATS
// client sees them there.
func TestStepsRecordTheirWriter(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	admin := openLog(t, srv)
	worker := openLog(t, srv, eventlog.WithWriterRole("worker"))

	seq, err := admin.Append(ctx, "c", 0, user("c", "r0", 0, "by the admin"))
	require.NoError(t, err)
	seq, err = worker.Append(ctx, "c", seq, reply("c", "r0", 1, "by a worker"))
	require.NoError(t, err)
	assert.Equal(t, []string{"admin", "worker"}, writers(t, admin, "c"))

	stream, err := admin.JetStream().Stream(ctx, admin.Names().EventsStream)
	require.NoError(t, err)
	m, err := stream.GetMsg(ctx, seq)
	require.NoError(t, err)
	assert.Equal(t, "turnlog.events-worker.c", m.Subject)

	_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithWriterRole("client"))
	assert.ErrorContains(t, err, `writer role "client"`, "a client writes no events")
}

// TestLegacyStepsGoOn: a conversation stored before roles had subjects
// (on turnlog.events.<conversation>, as turnlog wrote it) is read with its
// steps unattributed, and appends go on from its last legacy step with the
// same optimistic concurrency: a writer behind it is refused, whichever
// role writes.
func TestLegacyStepsGoOn(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	worker := openLog(t, srv, eventlog.WithWriterRole("worker"))
	var seq uint64
	for i := range 2 {
		data, err := events.Encode(user("old", "r0", i, "legacy "+strconv.Itoa(i)))
		require.NoError(t, err)
		msg := &nats.Msg{Subject: l.Names().EventsSubject("old"), Data: data, Header: nats.Header{}}
		msg.Header.Set(jetstream.MsgIDHeader, eventlog.StepID("r0", i))
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(seq, 10))
		ack, err := l.JetStream().PublishMsg(ctx, msg)
		require.NoError(t, err)
		seq = ack.Sequence
	}
	assert.Equal(t, []string{"", ""}, writers(t, l, "old"))

	_, err := worker.Append(ctx, "old", seq-1, reply("old", "r1", 0, "behind the legacy steps"))
	assert.ErrorIs(t, err, eventlog.ErrConflict, "the check covers the legacy subject")
	_, err = worker.Append(ctx, "old", 0, reply("old", "r1", 0, "as if new"))
	assert.ErrorIs(t, err, eventlog.ErrConflict)

	next, err := worker.Append(ctx, "old", seq, reply("old", "r1", 0, "after the legacy steps"))
	require.NoError(t, err)
	_, err = l.Append(ctx, "old", seq, reply("old", "r2", 0, "a second writer that saw the same legacy step"))
	assert.ErrorIs(t, err, eventlog.ErrConflict, "one ordered log across the legacy and role subjects")

	turn, err := l.Load(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, []string{"legacy 0", "legacy 1", "after the legacy steps"}, texts(turn))
	assert.Equal(t, next, turn.Seq)
	assert.Equal(t, []string{"", "", "worker"}, writers(t, l, "old"))

	convs, err := l.Conversations(ctx)
	require.NoError(t, err)
	assert.Equal(t, []eventlog.Conversation{{ID: "old", Messages: 3}}, convs, "one conversation over its subjects")

	erased, err := l.Erase(ctx, "old")
	require.NoError(t, err)
	assert.Equal(t, uint64(3), erased.Messages, "erase takes the legacy and the role subjects")
}

// TestStreamOnlyReadsIgnoreTheHistoryCache: the history cache is written
// by the workers, so a worker's credential can make it say that the admin
// wrote a step; a log opened FromStreamOnly (replay --verify's) reads who
// wrote what from the stream.
func TestStreamOnlyReadsIgnoreTheHistoryCache(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	worker := openLog(t, srv, eventlog.WithWriterRole("worker"))
	var seq uint64
	var err error
	for i := range 3 {
		seq, err = worker.Append(ctx, "c", seq, user("c", "r0", i, "step "+strconv.Itoa(i)))
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"worker", "worker", "worker"}, writers(t, worker, "c"), "the read writes the cache")
	kv, err := worker.JetStream().KeyValue(ctx, worker.Names().HistoryBucket)
	require.NoError(t, err)
	entry, err := kv.Get(ctx, "c")
	require.NoError(t, err)
	_, err = kv.Put(ctx, "c", eventlog.AlterHistoryCache(t, append([]byte(nil), entry.Value()...), "writer"))
	require.NoError(t, err)

	assert.Equal(t, []string{"admin", "admin", "worker"}, writers(t, worker, "c"), "a forged cache is believed by a plain read")
	audit := openLog(t, srv, eventlog.ReadOnly(), eventlog.FromStreamOnly())
	assert.Equal(t, []string{"worker", "worker", "worker"}, writers(t, audit, "c"))
}

// TestRepairKeepsWhoWroteEachStep: a repair stores the kept messages again
// on the admin's subject (only the admin may repair), each still read as
// written by the role that wrote the original; a worker's log cannot
// repair (its first store is on the admin's subject, refused under
// authentication).
func TestRepairKeepsWhoWroteEachStep(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	admin := openLog(t, srv)
	worker := openLog(t, srv, eventlog.WithWriterRole("worker"))
	data, err := events.Encode(user("c", "r0", 0, "legacy"))
	require.NoError(t, err)
	// A step of a turnlog before roles: on the legacy subject, with its ID.
	ack, err := admin.JetStream().Publish(ctx, admin.Names().EventsSubject("c"), data, jetstream.WithMsgID(eventlog.StepID("r0", 0)))
	require.NoError(t, err)
	seq, err := worker.Append(ctx, "c", ack.Sequence, reply("c", "r0", 1, "by a worker"))
	require.NoError(t, err)
	seq, err = admin.Append(ctx, "c", seq, user("c", "r1", 0, "by the admin"))
	require.NoError(t, err)
	bad := garbage(t, admin, "c", []byte("garbage"))
	_, err = worker.Append(ctx, "c", bad, reply("c", "r1", 1, "after the garbage"))
	require.NoError(t, err)

	plan, err := admin.PlanRepair(ctx, "c")
	require.NoError(t, err)
	require.Positive(t, plan.Restore)
	require.NoError(t, admin.RemoveCorrupt(ctx, plan, "repair-1", "operator:ada"))
	assert.Equal(t, []string{"", "worker", "admin", "worker", "admin"}, writers(t, admin, "c"),
		"legacy, worker and admin steps stored again with their writers, then the admin's audit step")
}

// TestLogWritesAsItsConnectionsRole: a program that connects with a role's
// credential and opens a log without WithWriterRole writes as that role
// (its connection's inbox prefix names it): with worker.nk, its appends
// are the worker's and the server takes them, where writing as the admin
// would have each refused after a timeout. WithWriterRole still decides.
func TestLogWritesAsItsConnectionsRole(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t, natstest.WithAuth())
	admin, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	assert.Equal(t, "admin", admin.WriterRole())

	wl, err := eventlog.Open(ctx, srv.ConnectAs(t, natsauth.Worker))
	require.NoError(t, err)
	assert.Equal(t, "worker", wl.WriterRole())
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	_, err = wl.Append(ctx, "c", 0, user("c", "r0", 0, "by a worker's program"))
	require.NoError(t, err)
	assert.Equal(t, []string{"worker"}, writers(t, admin, "c"))

	asAdmin, err := eventlog.Open(ctx, srv.ConnectAs(t, natsauth.Worker), eventlog.WithWriterRole("admin"))
	require.NoError(t, err)
	assert.Equal(t, "admin", asAdmin.WriterRole(), "WithWriterRole decides")
}
