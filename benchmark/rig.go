package benchmark

import (
	"context"
	"os"

	"github.com/nats-io/nats.go"

	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
)

// teardown is what a benchmark rig started and must undo when it stops
// (servers, connections, temporary directories), the last first. The
// rigs embed it.
type teardown struct {
	undo []func()
}

// stop undoes everything the rig started.
func (t *teardown) stop() {
	for i := len(t.undo) - 1; i >= 0; i-- {
		t.undo[i]()
	}
}

// startLog starts an embedded server (returned with the connection, for
// the rig's other clients) in a new temporary directory (named
// after pattern, as os.MkdirTemp) and opens the event log on a connection
// to it. The directory, the server and the connection are undone by stop,
// also when startLog fails half-way.
func (t *teardown) startLog(ctx context.Context, pattern string) (*embedded.Server, *nats.Conn, *eventlog.Log, error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return nil, nil, nil, err
	}
	t.undo = append(t.undo, func() { os.RemoveAll(dir) })
	srv, err := embedded.Start(embedded.Config{DataDir: dir})
	if err != nil {
		return nil, nil, nil, err
	}
	t.undo = append(t.undo, srv.Shutdown)
	nc, err := srv.Connect()
	if err != nil {
		return nil, nil, nil, err
	}
	t.undo = append(t.undo, nc.Close)
	l, err := eventlog.Open(ctx, nc)
	if err != nil {
		return nil, nil, nil, err
	}
	return srv, nc, l, nil
}
