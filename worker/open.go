package worker

// This file holds how a worker process gets its log at start: it waits for
// NATS and JetStream as long as it takes, as it does when it loses them
// later, instead of exiting because the servers were not up yet.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/eventlog"
)

// OpenLog opens the event log through nc (eventlog.Open with opts),
// retrying with backoff while NATS is unreachable or JetStream unavailable
// (no connection yet, an election, a node cut off), until ctx ends. Dial nc
// with nats.RetryOnFailedConnect(true) and nats.MaxReconnects(-1) so that
// a server that is not up yet is retried too. The wait is logged once when
// it begins and once when it ends; an error that retrying cannot cure (a
// bad option, a refused permission) is returned at once.
func OpenLog(ctx context.Context, nc *nats.Conn, logger *slog.Logger, opts ...eventlog.Option) (*eventlog.Log, error) {
	if logger == nil {
		logger = slog.Default()
	}
	backoff := 100 * time.Millisecond
	var waitingSince time.Time
	waiting := func(err error) {
		if waitingSince.IsZero() {
			waitingSince = time.Now()
			logger.Warn("waiting for NATS and JetStream; retrying until they answer", "servers", nc.Servers(), "err", err)
		}
	}
	for {
		var err error
		if nc.IsConnected() {
			attempt, cancel := context.WithTimeout(ctx, 10*time.Second)
			var l *eventlog.Log
			l, err = eventlog.Open(attempt, nc, opts...)
			cancel()
			if err == nil {
				if !waitingSince.IsZero() {
					logger.Info("NATS and JetStream reachable; starting", "waited", time.Since(waitingSince).Round(time.Millisecond))
				}
				return l, nil
			}
			if ctx.Err() == nil && nc.IsConnected() && !eventlog.Unavailable(err) {
				return nil, err
			}
		} else {
			// The connection is being (re-)established in the background.
			err = errors.Join(errors.New("no connection to NATS"), nc.LastError())
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("open event log: %w (last error: %v)", ctx.Err(), err)
		}
		waiting(err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("open event log: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}
