package eventlog_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// garbage publishes data on the conversation's subject as a damaged step:
// with a message ID, as every step turnlog stores (without one, it would
// be foreign, not quarantined: see foreign_test.go), and another header;
// it returns its sequence.
func garbage(t *testing.T, l *eventlog.Log, conv string, data []byte) uint64 {
	t.Helper()
	msg := &nats.Msg{Subject: l.Names().EventsSubject(conv), Data: data, Header: nats.Header{"X-Origin": []string{"intruder"},
		jetstream.MsgIDHeader: []string{"damaged:" + ulid.Make().String()}}}
	ack, err := l.JetStream().PublishMsg(context.Background(), msg)
	require.NoError(t, err)
	return ack.Sequence
}

// readable folds the conversation and returns its user texts and every
// event's position and type.
func readable(t *testing.T, l *eventlog.Log, conv string) ([]string, []events.Type) {
	t.Helper()
	turn, err := l.Load(context.Background(), conv)
	require.NoError(t, err)
	var types []events.Type
	for rec, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		require.Equal(t, len(types)+1, rec.Pos)
		types = append(types, rec.Type)
	}
	return texts(turn), types
}

func TestRepairRemovesCorruptMessagesWithAnAudit(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "c", 0, user("c", "r0", 0, "one"))
	require.NoError(t, err)
	turn, err := l.Load(ctx, "c")
	require.NoError(t, err)
	require.NoError(t, l.SaveSnapshot(ctx, turn, eventlog.StepID("r0", 0)), "a snapshot from before the damage")
	bad1 := garbage(t, l, "c", []byte("garbage"))
	_, err = l.Append(ctx, "c", bad1, user("c", "r1", 0, "two"))
	require.NoError(t, err)
	other, err := events.Encode(user("elsewhere", "r9", 0, "not yours"))
	require.NoError(t, err)
	bad2 := garbage(t, l, "c", other)
	_, err = l.Append(ctx, "c", bad2, user("c", "r2", 0, "three"))
	require.NoError(t, err)
	_, err = l.Load(ctx, "c")
	require.ErrorIs(t, err, eventlog.ErrCorruptMessage)

	plan, err := l.PlanRepair(ctx, "c")
	require.NoError(t, err)
	require.Len(t, plan.Corrupt, 2)
	assert.Equal(t, 3, plan.Restore, "kept messages come before removed ones: they are stored again")
	sum := sha256.Sum256([]byte("garbage"))
	assert.Equal(t, eventlog.CorruptMessage{Seq: bad1, Size: len("garbage"), SHA256: hex.EncodeToString(sum[:]),
		Headers: map[string]string{"X-Origin": "intruder", jetstream.MsgIDHeader: plan.Corrupt[0].Headers[jetstream.MsgIDHeader]}, Reason: plan.Corrupt[0].Reason}, plan.Corrupt[0])
	assert.Contains(t, plan.Corrupt[1].Reason, "another conversation")

	cause := ulid.Make().String()
	require.NoError(t, l.RemoveCorrupt(ctx, plan, cause, "repair"))
	got, types := readable(t, l, "c")
	assert.Equal(t, []string{"one", "two", "three"}, got, "the conversation reads again, every step kept")
	assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeUserAppended, events.TypeUserAppended,
		events.TypeMessageRemoved, events.TypeMessageRemoved}, types, "positions unchanged, the audit after")
	var removed []events.MessageRemoved
	for rec, err := range l.Events(ctx, "c") {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.MessageRemoved); ok {
			removed = append(removed, p)
			assert.Equal(t, cause, rec.Cause)
			assert.Equal(t, "repair", rec.Actor)
		}
	}
	require.Len(t, removed, 2)
	assert.Equal(t, int(bad1), removed[0].Seq)
	assert.Equal(t, len("garbage"), removed[0].Size)
	assert.Equal(t, hex.EncodeToString(sum[:]), removed[0].SHA256)
	assert.Equal(t, "intruder", removed[0].Headers["X-Origin"])
	assert.Equal(t, int(bad2), removed[1].Seq)
	stream, err := l.JetStream().Stream(ctx, l.Names().EventsStream)
	require.NoError(t, err)
	for _, seq := range []uint64{bad1, bad2} {
		_, err := stream.GetMsg(ctx, seq)
		assert.ErrorIs(t, err, jetstream.ErrMsgNotFound, "message %d is gone from the stream", seq)
	}
	snaps, err := l.JetStream().KeyValue(ctx, l.Names().SnapshotsBucket)
	require.NoError(t, err)
	_, err = snaps.Get(ctx, "c")
	assert.ErrorIs(t, err, jetstream.ErrKeyNotFound, "the snapshot from before is dropped, it cannot bring back old sequences")
	again, err := l.PlanRepair(ctx, "c")
	require.NoError(t, err)
	assert.True(t, again.Empty(), "nothing left to repair: %+v", again)

	// The conversation goes on after the repair.
	turn, err = l.Load(ctx, "c")
	require.NoError(t, err)
	_, err = l.Append(ctx, "c", turn.Seq, user("c", "r3", 0, "four"))
	require.NoError(t, err)
	got, _ = readable(t, l, "c")
	assert.Equal(t, []string{"one", "two", "three", "four"}, got)
}

// TestRepairOfGarbageBeforeTheConversationOnlyPurges: when every removed
// message comes before the first kept one, nothing is stored again.
func TestRepairOfGarbageBeforeTheConversationOnlyPurges(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	bad := garbage(t, l, "early", []byte{0xc1})
	seq, err := l.Append(ctx, "early", bad, user("early", "r0", 0, "hello"))
	require.NoError(t, err)
	plan, err := l.PlanRepair(ctx, "early")
	require.NoError(t, err)
	require.Len(t, plan.Corrupt, 1)
	assert.Zero(t, plan.Restore)
	require.NoError(t, l.RemoveCorrupt(ctx, plan, ulid.Make().String(), "repair"))
	got, types := readable(t, l, "early")
	assert.Equal(t, []string{"hello"}, got)
	assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeMessageRemoved}, types)
	last, err := l.Last(ctx, "early")
	require.NoError(t, err)
	first := uint64(0)
	for rec, err := range l.Events(ctx, "early") {
		require.NoError(t, err)
		first = rec.Seq
		break
	}
	assert.Equal(t, seq, first, "the kept message was not stored again")
	assert.Greater(t, last.Seq, seq)
}

// TestAnInterruptedRepairIsFinishedByTheNext: copies an interrupted repair
// stored are dropped (their originals are kept), and the next repair
// removes the corrupt message with its audit.
func TestAnInterruptedRepairIsFinishedByTheNext(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "cut", 0, user("cut", "r0", 0, "one"))
	require.NoError(t, err)
	bad := garbage(t, l, "cut", []byte("garbage"))
	_, err = l.Append(ctx, "cut", bad, user("cut", "r1", 0, "two"))
	require.NoError(t, err)
	// What a repair that stopped after storing its first copy leaves.
	var data []byte
	for raw, err := range l.Events(ctx, "cut") {
		if errors.Is(err, eventlog.ErrCorruptMessage) {
			continue
		}
		require.NoError(t, err)
		data, err = events.Encode(raw.Event)
		require.NoError(t, err)
		break
	}
	msg := &nats.Msg{Subject: l.Names().EventsSubject("cut"), Data: data, Header: nats.Header{eventlog.HeaderRepair: []string{"interrupted"},
		jetstream.MsgIDHeader: []string{"repair:interrupted:1"}}}
	_, err = l.JetStream().PublishMsg(ctx, msg)
	require.NoError(t, err)

	plan, err := l.PlanRepair(ctx, "cut")
	require.NoError(t, err)
	assert.Equal(t, 1, plan.Leftovers)
	require.Len(t, plan.Corrupt, 1)
	require.NoError(t, l.RemoveCorrupt(ctx, plan, ulid.Make().String(), "repair"))
	got, types := readable(t, l, "cut")
	assert.Equal(t, []string{"one", "two"}, got, "the leftover copy is gone, the steps are there once")
	assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeUserAppended, events.TypeMessageRemoved}, types)
}

// TestARepairStoppedBeforeItsPurgeIsFinished: a repair that stored its
// copies and its audit but not its purge left the originals in place; the
// next plan sees that and only purges.
func TestARepairStoppedBeforeItsPurgeIsFinished(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	subject := l.Names().EventsSubject("fin")
	step := user("fin", "r0", 0, "one")
	_, err := l.Append(ctx, "fin", 0, step)
	require.NoError(t, err)
	bad := garbage(t, l, "fin", []byte("garbage"))
	data, err := events.Encode(step)
	require.NoError(t, err)
	copied, err := l.JetStream().PublishMsg(ctx, &nats.Msg{Subject: subject, Data: data, Header: nats.Header{eventlog.HeaderRepair: []string{"R"},
		jetstream.MsgIDHeader: []string{"repair:R:1"}}})
	require.NoError(t, err)
	audit, err := events.Encode(events.New("fin", "R", 0, "repair", events.MessageRemoved{Seq: int(bad), Size: 7, SHA256: hex.EncodeToString(make([]byte, 32)), Reason: "x"}))
	require.NoError(t, err)
	_, err = l.JetStream().PublishMsg(ctx, &nats.Msg{Subject: subject, Data: audit, Header: nats.Header{
		eventlog.HeaderRepair: []string{"R"}, eventlog.HeaderPurgeBelow: []string{itoa(copied.Sequence)}, jetstream.MsgIDHeader: []string{"R:0"}}})
	require.NoError(t, err)

	plan, err := l.PlanRepair(ctx, "fin")
	require.NoError(t, err)
	assert.Equal(t, copied.Sequence, plan.Unfinished)
	assert.Empty(t, plan.Corrupt, "the garbage was audited by the repair that stopped")
	require.NoError(t, l.RemoveCorrupt(ctx, plan, ulid.Make().String(), "repair"))
	got, types := readable(t, l, "fin")
	assert.Equal(t, []string{"one"}, got)
	assert.Equal(t, []events.Type{events.TypeUserAppended, events.TypeMessageRemoved}, types)
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
