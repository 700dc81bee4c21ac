package worker

import (
	"context"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// earlierCalls are the model calls a resumed request made in the steps it
// stored before the delivery that resumes it: those it started (what
// request.completed counts) and those that were answered (what its
// profile's MaxIterations bounds; a call a crash cut off is made again).
type earlierCalls struct{ started, answered int }

// earlierCalls walks back from tail, the request's last stored step,
// through the request's steps to its first (step 0), by the links the
// server checked when it stored each (eventlog.Log.Before). A step
// without a link ends the walk: the count is then of the steps read.
func (w *Worker) earlierCalls(ctx context.Context, conv string, tail eventlog.Tail) (earlierCalls, error) {
	var n earlierCalls
	for t := tail; t.Cause == tail.Cause; {
		for _, e := range t.Events {
			switch e.Payload.(type) {
			case events.InferenceStarted:
				n.started++
			case events.InferenceFinished:
				n.answered++
			}
		}
		if t.Step == 0 {
			break
		}
		prev, ok, err := w.cfg.Log.Before(ctx, conv, t)
		if err != nil || !ok {
			return n, err
		}
		t = prev
	}
	return n, nil
}
