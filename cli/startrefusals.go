package cli

// This file holds what a long-running process (turnlog gateway) says when
// it cannot start because the NATS server refuses its credential: a
// refused request gets no reply, so opening the log ends in a timeout
// ("bucket TURNLOG_THREADS: context deadline exceeded") that names neither
// the refusal nor the key the process needs.

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"

	"github.com/nats-io/nats.go"
)

// startRefusals keeps the first permission the server refused a process's
// connection. Some refusals are expected and harmless (a worker's key may
// not upgrade a stream an older turnlog made, and goes on with it as it
// is), so a refusal alone does not stop the start: it explains the start's
// failure, if it fails.
type startRefusals struct {
	mu    sync.Mutex
	first error
}

// option is the connection's error handler: it keeps the first refusal
// and logs every one as refusalLogger does.
func (r *startRefusals) option(logger *slog.Logger) nats.Option {
	logRefusal := refusalLogger(logger)
	return func(o *nats.Options) error {
		if err := logRefusal(o); err != nil {
			return err
		}
		logged := o.AsyncErrorCB
		o.AsyncErrorCB = func(nc *nats.Conn, sub *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				r.mu.Lock()
				if r.first == nil {
					r.first = err
				}
				r.mu.Unlock()
			}
			logged(nc, sub, err)
		}
		return nil
	}
}

// explain is err, the failed start of process, with the refusal that
// caused it and the key process needs (role's key file need), when the
// server refused something; else err as it is.
func (r *startRefusals) explain(err error, process, credential, role, need string) error {
	r.mu.Lock()
	refused := r.first
	r.mu.Unlock()
	if err == nil || refused == nil {
		return err
	}
	return fmt.Errorf("%s: the NATS server refused the credential %s: %v; %s needs the %s key: --creds %s (or TURNLOG_NATS_CREDS; see docs/roles.md) (%w)",
		process, credential, refused, process, role, need, err)
}
