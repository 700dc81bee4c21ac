package worker

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// progress tells JetStream that the worker is still on the requests in
// its hands (an in-progress ack restarts the server's ack timer for the
// message): a long model call keeps its request, while a worker that died
// holds it for at most AckWait.
//
// One ticker per worker reports for all its requests, every AckWait/3, a
// request from the second tick it sees on: at most 2/3 of AckWait after its
// delivery, then every third. Most requests end long before their first
// report is due; a timer of their own (and before that a goroutine with a
// ticker) cost each of them a timer's set-up and stop, which showed in the
// profile of `turnlog bench --workers`.
type progress struct {
	mu sync.Mutex
	// held maps each request message in hand to whether a tick has seen
	// it already.
	held map[jetstream.Msg]bool
}

func newProgress() *progress { return &progress{held: map[jetstream.Msg]bool{}} }

// hold starts reporting m until the returned release is called (a report
// already under way then may still go out: harmless for a request
// acknowledged or handed back, which nats.go sends no more reports for).
func (p *progress) hold(m jetstream.Msg) (release func()) {
	p.mu.Lock()
	p.held[m] = false
	p.mu.Unlock()
	return func() {
		p.mu.Lock()
		delete(p.held, m)
		p.mu.Unlock()
	}
}

// run reports every interval until ctx ends. The reports go out after the
// lock is let go, so that a connection slow to take them (a server gone
// silent) holds up this ticker only, never a request taken or released
// meanwhile; a report for a request acknowledged meanwhile is not sent
// (nats.go refuses any ack after the first).
func (p *progress) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var due []jetstream.Msg
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		due = due[:0]
		p.mu.Lock()
		for m, seen := range p.held {
			if seen {
				due = append(due, m)
			} else {
				p.held[m] = true
			}
		}
		p.mu.Unlock()
		for _, m := range due {
			_ = m.InProgress()
		}
	}
}
