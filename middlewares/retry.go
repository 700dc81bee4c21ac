package middlewares

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/engine"
)

// RetryConfig configures Retry.
type RetryConfig struct {
	// Attempts is the most times the rest of the chain runs, the first
	// try included (default 3).
	Attempts int
	// Base is the wait before the second attempt; each later wait doubles
	// (default 200ms).
	Base time.Duration
	// Max caps a wait (default 10s).
	Max time.Duration
	// Sleep waits d or until ctx is done, whichever comes first, and
	// returns ctx's error in the second case (default: a timer). Tests set
	// it to record the waits instead of sleeping.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (c *RetryConfig) setDefaults() {
	if c.Attempts == 0 {
		c.Attempts = 3
	}
	if c.Base == 0 {
		c.Base = 200 * time.Millisecond
	}
	if c.Max == 0 {
		c.Max = 10 * time.Second
	}
	if c.Sleep == nil {
		c.Sleep = sleep
	}
}

// Validate reports the first setting that cannot work.
func (c RetryConfig) Validate() error {
	switch {
	case c.Attempts < 1:
		return fmt.Errorf("retry: Attempts is %d; use 1 (no retry) or more", c.Attempts)
	case c.Base < 0 || c.Max < 0:
		return fmt.Errorf("retry: Base %s and Max %s must not be negative", c.Base, c.Max)
	case c.Max < c.Base:
		return fmt.Errorf("retry: Max %s is below Base %s; raise Max", c.Max, c.Base)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Retry runs the rest of the chain again when it fails with an error that
// matches engine.ErrTransient (rate limits, timeouts, 5xx: providers mark
// them), waiting Base, 2×Base, 4×Base... (at most Max) in between, up to
// Attempts runs in all. Use it in every chain that talks to a remote
// provider. Permanent errors return at once, and so does a cancelled ctx,
// with the last error.
//
// Every attempt is in the log: the chain records inference.started and
// inference.failed for each, so replay shows the retries.
//
// It does not retry a failure that left events uncommitted: after a failed
// append the Tx is ahead of the log and must be reloaded, and appending
// again under the same step number could be dropped as a duplicate.
// Middlewares inside Retry run again on each attempt (safe: they are
// idempotent), but for that reason a transient failure of one of them
// after another emitted an event is not retried. So put Retry innermost,
// right before the engine: each attempt is then exactly one model call.
func Retry(cfg RetryConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			wait := cfg.Base
			for attempt := 1; ; attempt++ {
				err := next(ctx, tx)
				if err == nil || !engine.IsTransient(err) || len(tx.Pending()) > 0 {
					return err
				}
				if attempt == cfg.Attempts {
					return fmt.Errorf("retry: gave up after %d attempts: %w", attempt, err)
				}
				if serr := cfg.Sleep(ctx, wait); serr != nil {
					return fmt.Errorf("retry: stopped after attempt %d of %d: %w", attempt, cfg.Attempts, errors.Join(serr, err))
				}
				wait = min(2*wait, cfg.Max)
			}
		}
	}, nil
}
