package worker

// This file holds how a request finds its conversation's Turn (cache,
// cache plus tail, or the log) and when the worker saves a snapshot.

import (
	"context"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
)

// load returns the conversation's Turn at lastSeq: an empty one when
// lastSeq is 0, the cached one when it is still the log's last, the cached
// one brought up to date with the messages written after it (by another
// worker) when it is behind, or a load from the log.
func (w *Worker) load(ctx context.Context, conv string, lastSeq uint64) (*projector.Turn, error) {
	t, _ := w.cache.take(conv)
	if lastSeq == 0 {
		// The log holds no message of the conversation: a new one (or
		// one erased, whose cached Turn is gone with it). A snapshot
		// left behind would be stale and is not read; a load would
		// only find that out with two more round trips. Should the
		// log have moved on after all, the first append's expected
		// sequence refuses the empty Turn.
		w.metrics.loads.WithLabelValues("new").Inc()
		return projector.New(conv), nil
	}
	if t != nil {
		switch {
		case t.Seq == lastSeq:
			w.metrics.cacheLoads.Inc()
			return t, nil
		case t.Seq < lastSeq:
			caught, err := w.cfg.Log.CatchUp(ctx, t)
			if err == nil {
				w.metrics.loads.WithLabelValues("cache_and_tail").Inc()
				return caught, nil
			}
		}
		// Ahead of what the log says (a lagging replica answered) or not
		// caught up: load afresh.
	}
	w.metrics.loads.WithLabelValues("log").Inc()
	return w.cfg.Log.Load(ctx, conv)
}

// snapshot saves the conversation's snapshot when the request took it past
// a multiple of the log's snapshot interval. A worker serves a conversation
// from its cache and rarely loads it, so Load, which writes snapshots after
// long folds, would seldom do so, and a restarted worker would fold the
// whole history. A failed save only costs that: it is logged, not returned.
func (w *Worker) snapshot(ctx context.Context, tx *engine.Tx, eventsAtStart int) {
	every := w.cfg.Log.SnapshotEvery()
	turn := tx.Turn()
	if every <= 0 || turn.Events/every == eventsAtStart/every || tx.Step() == 0 {
		return
	}
	last := eventlog.StepID(tx.Cause(), tx.Step()-1) // the message at turn.Seq
	if err := w.cfg.Log.SaveSnapshot(ctx, turn, last); err != nil {
		w.metrics.snapshots.WithLabelValues("failed").Inc()
		w.log.Warn("snapshot not saved", "conversation", turn.Conversation, "err", err)
		return
	}
	w.metrics.snapshots.WithLabelValues("interval").Inc()
	w.cache.noteSaved(turn.Conversation, turn.Events)
}
