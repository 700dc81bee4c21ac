package chatclient

// This file holds how the client retries what JetStream could not answer,
// and how it moves to another server when the one it uses stays
// unavailable.

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// retrier retries operations while JetStream is unavailable, and moves
// the connection to another server once it has been unavailable through
// the current one for failoverAfter. It is shared by the steps of one Ask,
// so unavailability met while sending counts toward the failover of the
// wait.
type retrier struct {
	c *Client

	mu        sync.Mutex
	since     time.Time // first failure of the current stretch of unavailability
	lastFail  time.Time
	fails     int
	lastMove  time.Time
	last      error // last error met, for the NoAnswerError
	failovers int
}

func (c *Client) retrier() *retrier { return &retrier{c: c} }

// permanentError is an error that retrying cannot cure.
type permanentError struct{ error }

func (p permanentError) Unwrap() error { return p.error }

func permanent(err error) error { return permanentError{err} }

// do runs fn, each attempt bounded by the client's attempt timeout, until
// it succeeds, fails with an error that is not unavailability, or ctx
// ends (then it returns ctx's error).
func (r *retrier) do(ctx context.Context, fn func(context.Context) error) error {
	backoff := 100 * time.Millisecond
	for {
		attempt, cancel := context.WithTimeout(ctx, r.c.attempt)
		err := fn(attempt)
		cancel()
		if err == nil {
			r.ok()
			return nil
		}
		if ctx.Err() != nil {
			r.failed(err)
			return ctx.Err()
		}
		var perm permanentError
		if errors.As(err, &perm) {
			return perm.error
		}
		if !eventlog.Unavailable(err) {
			return err
		}
		r.failed(err)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 2*time.Second)
	}
}

// ok records that the servers answered.
func (r *retrier) ok() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.since, r.lastFail, r.fails = time.Time{}, time.Time{}, 0
}

// failed records unavailability, and moves to another server when the
// current one has been unavailable, without an answer in between, for
// failoverAfter (at least two failures, none more than unavailableGap
// after the one before).
func (r *retrier) failed(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last = err
	now := time.Now()
	if r.lastFail.IsZero() || now.Sub(r.lastFail) > unavailableGap {
		r.since, r.fails = now, 0
	}
	r.fails++
	r.lastFail = now
	if r.fails < 2 || now.Sub(r.since) < r.c.failoverAfter || now.Sub(r.lastMove) < r.c.failoverAfter || len(r.c.nc.Servers()) < 2 {
		return
	}
	// The server in use answers nothing useful (cut off from the
	// others, or silent): reconnect, which tries the next server of the
	// pool. Subscriptions and the watch's consumer move along.
	if r.c.nc.ForceReconnect() == nil {
		r.lastMove, r.since, r.fails = now, now, 0
		r.failovers++
	}
}

// unavailableGap is the longest time between two failures that still
// counts as one stretch of unavailability.
const unavailableGap = 10 * time.Second

// lastErr is the last error met.
func (r *retrier) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// errWatchEnded: a watch stopped without an error (its consumer went away).
var errWatchEnded = errors.New("the watch of the conversation ended")
