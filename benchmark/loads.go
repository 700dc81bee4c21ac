package benchmark

import (
	"context"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
)

// write appends n events of exchanges to conv, compacting at compactAt.
func write(ctx context.Context, l *eventlog.Log, conv string, n, compactAt int) (*projector.Turn, error) {
	turn := projector.New(conv)
	for i := 0; turn.Events < n; i++ {
		for _, step := range exchange(turn, conv, i, compactAt) {
			if err := projector.ApplyAll(turn, step); err != nil {
				return nil, err
			}
			seq, err := l.Append(ctx, conv, turn.Seq, step...)
			if err != nil {
				return nil, err
			}
			turn.Seq = seq
		}
	}
	return turn, nil
}

// loads: median cold Load (snapshot + tail, no cache) of conversations of
// 1,000 and 100,000 events, each with a 40-event tail after its snapshot.
func (r *runner) loads(ctx context.Context, l *eventlog.Log) error {
	measure := func(conv string, n, compactAt int) (float64, error) {
		r.say("load: writing a %d-event conversation (compaction at %d blocks)", n, compactAt)
		turn, err := write(ctx, l, conv, n, compactAt)
		if err != nil {
			return 0, err
		}
		// The first load folds everything and leaves a snapshot behind;
		// then a realistic tail arrives after it.
		if _, err := l.Load(ctx, conv); err != nil {
			return 0, err
		}
		for i := 0; i < 7; i++ {
			for _, step := range exchange(turn, conv, 1_000_000+i, compactAt) {
				if err := projector.ApplyAll(turn, step); err != nil {
					return 0, err
				}
				if turn.Seq, err = l.Append(ctx, conv, turn.Seq, step...); err != nil {
					return 0, err
				}
			}
		}
		var times []float64
		for i := 0; i < 31; i++ {
			start := time.Now()
			got, err := l.Load(ctx, conv)
			if err != nil {
				return 0, err
			}
			times = append(times, float64(time.Since(start).Microseconds())/1000)
			if got.Events != turn.Events {
				return 0, fmt.Errorf("load %s: %d events, wrote %d", conv, got.Events, turn.Events)
			}
		}
		return median(times), nil
	}
	var err error
	if r.res.LoadMs1k, err = measure("load-1k", 1000, 200); err != nil {
		return err
	}
	r.res.LongConversationEvents = r.cfg.LongConversation
	if r.res.LoadMs100k, err = measure("load-100k", r.cfg.LongConversation, 200); err != nil {
		return err
	}
	r.res.LoadMs100kUncompacted, err = measure("load-100k-full", r.cfg.LongConversation, 0)
	return err
}
