package worker

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keepAlive tells JetStream every AckWait/3 that the worker is still on
// m (an in-progress ack restarts the server's ack timer), until the
// returned stop is called: a long model call keeps its request, while a
// worker that died holds it for at most AckWait. A timer rather than a
// goroutine with a ticker: most requests end long before the first report
// is due, and then it cost a goroutine, a ticker and a context each.
func (w *Worker) keepAlive(m jetstream.Msg) (stop func()) {
	every := w.cfg.AckWait / 3
	var (
		mu      sync.Mutex
		stopped bool
		t       *time.Timer
	)
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		_ = m.InProgress()
		t.Reset(every)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		t.Stop()
	}
}
