package benchmark

import (
	"context"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// foldRounds is how many times each fold figure is measured; each is the
// median of its rounds.
const foldRounds = 5

// fold measures how fast a log becomes a Turn: events per second decoded
// from the stored message bytes and applied, as a load, a catch-up or a
// replay does (fold_events_per_s), and applied only, from events decoded
// beforehand (apply_events_per_s). The first figure's rounds run while
// only the messages are held, as a loader holds what it read; the decoded
// events the second needs are made afterwards (a heap held for the other
// figure makes the collector's work, and so each figure, depend on it).
func (r *runner) fold(_ context.Context, _ *eventlog.Log) error {
	r.say("fold: %d events, from the stored messages, then from decoded events, %d rounds each", r.cfg.Fold, foldRounds)
	msgs, err := foldMessages(r.cfg.Fold)
	if err != nil {
		return err
	}
	var fold, apply []float64
	for range foldRounds {
		start := time.Now()
		if _, err := foldBytes(msgs); err != nil {
			return err
		}
		fold = append(fold, float64(r.cfg.Fold)/time.Since(start).Seconds())
	}
	evs, err := decodeAll(msgs)
	if err != nil {
		return err
	}
	for range foldRounds {
		start := time.Now()
		if err := applyAll(evs); err != nil {
			return err
		}
		apply = append(apply, float64(r.cfg.Fold)/time.Since(start).Seconds())
	}
	r.res.FoldEventsPerS, r.res.ApplyEventsPerS = median(fold), median(apply)
	return nil
}

// foldMessages returns n events of chat exchanges (compacted whenever the
// Turn passes 400 blocks) as the log stores them, one message per step.
func foldMessages(n int) ([][]byte, error) {
	var msgs [][]byte
	model := projector.New("fold")
	for i := 0; model.Events < n; i++ {
		for _, step := range exchange(model, "fold", i, 400) {
			step = step[:min(len(step), n-model.Events)]
			if len(step) == 0 {
				break
			}
			if err := projector.ApplyAll(model, step); err != nil {
				return nil, err
			}
			data, err := events.Encode(step...)
			if err != nil {
				return nil, err
			}
			msgs = append(msgs, data)
		}
	}
	return msgs, nil
}

// decodeAll decodes every message.
func decodeAll(msgs [][]byte) ([][]events.Event, error) {
	out := make([][]events.Event, len(msgs))
	for i, m := range msgs {
		var err error
		if out[i], err = events.DecodeOwned(m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// foldBytes decodes and applies msgs into a new Turn, as eventlog's loads
// do with the messages they read.
func foldBytes(msgs [][]byte) (*projector.Turn, error) {
	turn := projector.New("fold")
	for _, m := range msgs {
		evs, err := events.DecodeOwned(m)
		if err != nil {
			return nil, err
		}
		if err := projector.ApplyAll(turn, evs); err != nil {
			return nil, err
		}
	}
	return turn, nil
}

// applyAll applies decoded events into a new Turn.
func applyAll(msgs [][]events.Event) error {
	turn := projector.New("fold")
	for _, evs := range msgs {
		if err := projector.ApplyAll(turn, evs); err != nil {
			return err
		}
	}
	return nil
}
