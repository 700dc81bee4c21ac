package benchmark

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// block is how many publishes or appends one timed block holds. The
// figures alternate in blocks this small, so that a machine busy with
// something else slows both alike; each figure is the median of its blocks.
// (Rounds of thousands let a burst of load hit one side only: the ratio of
// the same binary then moved between 0.35 and 0.94 on a busy machine.)
const block = 100

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// publishes measures, in interleaved blocks: raw JetStream sync publish of
// messages the size of a one-event step to the same stream without
// headers (the bound turnlog is compared with); turnlog Append of one event
// per call, with the expected-sequence check and the step ID, including
// validating and encoding the event; and Append of four events per call.
// The events are built before their block is timed, as raw's bytes are:
// building a chat event is the caller's work, not the log's.
func (r *runner) publishes(ctx context.Context, l *eventlog.Log) error {
	sample, err := events.Encode(userEvent("raw", "sample", 0, 0))
	if err != nil {
		return err
	}
	r.res.EventBytes = len(sample)
	js := l.JetStream()
	subject := l.Names().EventsSubject("raw-publish")
	blocks := max(r.cfg.Publishes/block, 3)
	r.say("publish and append: %d interleaved blocks of %d raw publishes (%d bytes), %d one-event appends, %d four-event appends",
		blocks, block, len(sample), block, block/4)
	var raw, one, four, ratio []float64
	var seq1, seq4 uint64
	evs := make([]events.Event, block)
	for b := 0; b < blocks; b++ {
		start := time.Now()
		for i := 0; i < block; i++ {
			if _, err := js.Publish(ctx, subject, sample); err != nil {
				return fmt.Errorf("raw publish: %w", err)
			}
		}
		raw = append(raw, float64(block)/time.Since(start).Seconds())

		for i := range evs {
			step := b*block + i
			evs[i] = userEvent("bench-append", "a", step, step)
		}
		start = time.Now()
		for i := range evs {
			if seq1, err = l.Append(ctx, "bench-append", seq1, evs[i]); err != nil {
				return err
			}
		}
		one = append(one, float64(block)/time.Since(start).Seconds())
		ratio = append(ratio, one[len(one)-1]/raw[len(raw)-1])

		for i := range evs {
			step := b*block + i/4
			evs[i] = userEvent("bench-batch", "b", step, i)
		}
		start = time.Now()
		for i := 0; i < block; i += 4 {
			if seq4, err = l.Append(ctx, "bench-batch", seq4, evs[i:i+4]...); err != nil {
				return err
			}
		}
		four = append(four, float64(block)/time.Since(start).Seconds())
	}
	r.res.RawPublishPerS, r.res.AppendPerS, r.res.AppendBatch4EventsPerS = median(raw), median(one), median(four)
	r.res.AppendToRaw = median(ratio)
	return nil
}
