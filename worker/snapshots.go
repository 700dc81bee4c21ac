package worker

// This file holds when the worker saves a Turn's snapshot (and refreshes
// the conversation's history cache) besides the
// interval rule of load.go: when it lets go of the Turn (the cache's byte
// bound), when the Turn has sat idle in the cache, and when the worker
// stops. A conversation a worker has served then has a snapshot at its
// last message, so the next load of it, by any worker, reads one snapshot
// and one message, however long ago and however spread over the stream its
// events were written. All of it runs beside the requests, never in their
// way: a save that cannot be queued is skipped (and counted).

import (
	"context"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
)

// DefaultCacheBytes is the default Config.CacheBytes.
const DefaultCacheBytes = 256 << 20

// DefaultIdleSnapshot is the default Config.IdleSnapshot.
const DefaultIdleSnapshot = 30 * time.Second

// maxHistoryRefreshEvents bounds the conversations whose history cache a
// worker refreshes: a longer one does not fit the cache (eventlog caches
// up to 1 MiB of messages, ~2,000 events of chat), and would be read whole
// for nothing.
const maxHistoryRefreshEvents = 1500

// saveJob is a Turn to snapshot. An idle one goes back into the cache
// after its save; one the cache let go of does not.
type saveJob struct {
	turn    *projector.Turn
	cause   string
	reason  string
	putBack bool
}

// release is the cache's hand-off of a Turn it let go of.
func (w *Worker) release(t *projector.Turn) {
	select {
	case w.saves <- saveJob{turn: t, reason: "evicted"}:
	default:
		w.metrics.snapshots.WithLabelValues("skipped").Inc()
	}
}

// saveLoop saves the queued Turns and, every half IdleSnapshot, takes the
// idle ones out of the cache to save them, until ctx ends.
func (w *Worker) saveLoop(ctx context.Context) {
	var tick <-chan time.Time
	if w.cfg.IdleSnapshot > 0 {
		t := time.NewTicker(max(w.cfg.IdleSnapshot/2, 10*time.Millisecond))
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case job := <-w.saves:
			w.save(ctx, job)
		case <-tick:
			turns, causes := w.cache.idle(w.cfg.IdleSnapshot)
			for i, t := range turns {
				w.save(ctx, saveJob{turn: t, cause: causes[i], reason: "idle", putBack: true})
			}
		}
	}
}

// saveAll saves every cached Turn ahead of its snapshot, and those still
// queued: the last thing a stopping worker does.
func (w *Worker) saveAll(ctx context.Context) {
	turns, causes := w.cache.takeAhead(time.Now().Add(time.Hour))
	for i, t := range turns {
		w.save(ctx, saveJob{turn: t, cause: causes[i], reason: "shutdown"})
	}
	for {
		select {
		case job := <-w.saves:
			job.reason = "shutdown"
			w.save(ctx, job)
		default:
			return
		}
	}
}

// save snapshots job's Turn if it is still the conversation's last state
// in the log (another worker may have moved on, or the conversation been
// erased); the log's last message names the step the snapshot ends with.
func (w *Worker) save(ctx context.Context, job saveJob) {
	t := job.turn
	if job.putBack {
		defer w.cache.putBack(t, job.cause)
	}
	tail, err := w.cfg.Log.Last(ctx, t.Conversation)
	if err == nil && tail.Seq == t.Seq {
		// The ID of the message at t.Seq, which a load checks: the last
		// step's, or a foreign message's after it (eventlog.Tail).
		id := eventlog.StepID(tail.Cause, tail.Step)
		if tail.StepSeq != tail.Seq || (tail.MsgID != "" && tail.MsgID != id) {
			id = tail.MsgID
		}
		err = w.cfg.Log.SaveSnapshot(ctx, t, id)
		if err == nil {
			w.metrics.snapshots.WithLabelValues(job.reason).Inc()
			if job.putBack {
				w.cache.noteSaved(t.Conversation, t.Events)
			}
			// And its history cache, for the audit tools, while the
			// conversation's last messages are fresh in the server.
			if t.Events <= maxHistoryRefreshEvents {
				if err := w.cfg.Log.RefreshHistory(ctx, t.Conversation); err != nil {
					w.log.Debug("history cache not refreshed", "conversation", t.Conversation, "err", err)
				}
			}
			return
		}
	}
	if err != nil {
		w.metrics.snapshots.WithLabelValues("failed").Inc()
		w.log.Debug("snapshot not saved", "conversation", t.Conversation, "reason", job.reason, "err", err)
	}
}
