package benchmark

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
	"github.com/vmihailenco/msgpack/v5"
)

// bytes: storage for a 200-exchange conversation as events, against storing
// the whole Turn after every exchange (the snapshot-per-step design), each
// in a stream of its own on the same server.
func (r *runner) bytes(ctx context.Context, _ *eventlog.Log) error {
	r.say("bytes: 200 exchanges as events and as a Turn snapshot per exchange")
	l, err := eventlog.Open(ctx, r.nc, eventlog.WithPrefix("benchbytes"))
	if err != nil {
		return err
	}
	js := l.JetStream()
	snaps, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCHBYTES_TURNS", Subjects: []string{"benchbytes.turns.>"}})
	if err != nil {
		return err
	}
	turn := projector.New("c200")
	for i := 0; i < 200; i++ {
		for _, step := range exchange(turn, "c200", i, 0) {
			if err := projector.ApplyAll(turn, step); err != nil {
				return err
			}
			if turn.Seq, err = l.Append(ctx, "c200", turn.Seq, step...); err != nil {
				return err
			}
		}
		whole, err := msgpack.Marshal(turn)
		if err != nil {
			return err
		}
		if _, err := js.Publish(ctx, "benchbytes.turns.c200", whole); err != nil {
			return err
		}
	}
	ev, err := js.Stream(ctx, l.Names().EventsStream)
	if err != nil {
		return err
	}
	evInfo, err := ev.Info(ctx)
	if err != nil {
		return err
	}
	snInfo, err := snaps.Info(ctx)
	if err != nil {
		return err
	}
	r.res.BytesEvents200 = int64(evInfo.State.Bytes)
	r.res.BytesSnapshots200 = int64(snInfo.State.Bytes)
	return nil
}
