package cli

// This file holds what a long-running process (turnlog gateway, turnlog
// worker) does when the NATS server refuses its credential while it
// starts: a refused request gets no reply, so opening the log ended in a
// timeout ("bucket TURNLOG_THREADS: context deadline exceeded") that named
// neither the refusal nor the key the process needs, and a worker, which
// retries a timeout, waited for ever.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// startRefusals watches a process's connection while it opens its log:
// the first permission the server refuses then ends the start (see watch),
// and the start's error says which key the process needs.
type startRefusals struct {
	// process, credential, role and need are for the error: the command,
	// the credential it used, the role whose key it needs and that key's
	// file.
	process, credential, role, need string

	mu       sync.Mutex
	first    error
	starting []context.CancelCauseFunc
}

// option is the connection's error handler: it ends the starts under way
// at a refusal and logs every refusal as refusalLogger does.
func (r *startRefusals) option(logger *slog.Logger) nats.Option {
	logRefusal := refusalLogger(logger)
	return func(o *nats.Options) error {
		if err := logRefusal(o); err != nil {
			return err
		}
		logged := o.AsyncErrorCB
		o.AsyncErrorCB = func(nc *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) && !expectedAtStart(err) {
				r.mu.Lock()
				if r.first == nil {
					r.first = err
				}
				for _, cancel := range r.starting {
					cancel(err)
				}
				r.mu.Unlock()
			}
			logged(nc, sub, err)
		}
		return nil
	}
}

// expectedAtStart reports whether a refusal is one a process with the
// right key meets while it starts: a worker's key may not change a stream
// an older turnlog made, and the log goes on with the stream as it is.
func expectedAtStart(err error) bool {
	return strings.Contains(err.Error(), ".STREAM.UPDATE.")
}

// watch returns ctx for opening the log, ended by the first refusal, and
// what ends the watch once the log is open (a refusal afterwards is only
// logged: a running process goes on).
func (r *startRefusals) watch(ctx context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	r.mu.Lock()
	if r.first != nil {
		cancel(r.first)
	}
	r.starting = append(r.starting, cancel)
	r.mu.Unlock()
	return ctx, func() {
		r.mu.Lock()
		r.starting = nil
		r.mu.Unlock()
		cancel(nil)
	}
}

// explain is err, the failed start, with the refusal that caused it and
// the key the process needs, when the server refused something; else err
// as it is. err is quoted, not wrapped: it is the cancelled start's
// context.Canceled, which a worker takes for a stop asked by its user.
func (r *startRefusals) explain(err error) error {
	r.mu.Lock()
	refused := r.first
	r.mu.Unlock()
	if err == nil || refused == nil {
		return err
	}
	return fmt.Errorf("%s: the NATS server refused the credential %s: %v; %s needs the %s key: --creds %s (or TURNLOG_NATS_CREDS; see docs/roles.md) (%v)",
		r.process, r.credential, refused, r.process, r.role, r.need, err)
}
