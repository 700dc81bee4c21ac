package natstest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// Dial connects to every server of c, as `turnlog --nats-url a,b,c` does:
// when the server it uses dies, the client reconnects to another and keeps
// going. The connection is closed by tb.Cleanup.
func (c *Cluster) Dial(tb testing.TB, name string) *nats.Conn {
	tb.Helper()
	nc, err := nats.Connect(c.URLs(), nats.Name(name),
		nats.MaxReconnects(-1), nats.ReconnectWait(100*time.Millisecond))
	if err != nil {
		tb.Fatalf("connect to the cluster: %v", err)
	}
	tb.Cleanup(nc.Close)
	return nc
}

// Retry calls fn with a context bounded by per until it succeeds, returns
// an error marked Permanent, or ctx ends. Around a cluster forming or an
// election, requests time out or find no responder (at-most-once delivery
// while routes settle), and only a bound per attempt gets past that.
func Retry(ctx context.Context, per time.Duration, fn func(context.Context) error) error {
	for {
		attempt, cancel := context.WithTimeout(ctx, per)
		err := fn(attempt)
		cancel()
		var perm permanent
		if err == nil || errors.As(err, &perm) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Permanent marks an error that Retry returns at once: an answer, not a
// cluster in flux.
func Permanent(err error) error { return permanent{err} }

type permanent struct{ err error }

func (p permanent) Error() string { return p.err.Error() }
func (p permanent) Unwrap() error { return p.err }
