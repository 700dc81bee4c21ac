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
// ticker) cost each of them a timer's set-up and stop, a tenth of what
// `turnlog bench --workers` measured of a worker's own work outside the
// log.
type progress struct {
	mu sync.Mutex
	// held maps each request message in hand to whether a tick has seen
	// it already.
	held map[jetstream.Msg]bool
}

func newProgress() *progress { return &progress{held: map[jetstream.Msg]bool{}} }

// hold starts reporting m until the returned release is called.
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

// run reports every interval until ctx ends. The reports are sent with
// the lock held, so none goes out for a request once its release returned.
func (p *progress) run(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.mu.Lock()
		for m, seen := range p.held {
			if seen {
				_ = m.InProgress()
			} else {
				p.held[m] = true
			}
		}
		p.mu.Unlock()
	}
}
