package gateway

import (
	"context"
	"time"
)

// spoolLookupTimeout bounds how long a call taken into the spool waits
// for the shared threading index to say which conversation it goes on: a
// NATS server that is connected but answers nothing must not hold the
// call (and the gateway's stopping after it) for ever. Past it, the call
// is threaded by what this gateway knows.
const spoolLookupTimeout = 10 * time.Second

// stop marks the gateway as stopping (Run's context ended), and gives up
// what calls wait for while it runs.
func (g *Gateway) stop() {
	g.stopping.Store(true)
	g.endLife()
}

// lookupContext is the context of a lookup a call makes in the shared
// threading index: it ends with the call's (the client gone), when the
// gateway stops, or after spoolLookupTimeout. The caller calls cancel.
func (g *Gateway) lookupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(ctx, spoolLookupTimeout)
	unhook := context.AfterFunc(g.life, cancel)
	return ctx, func() {
		unhook()
		cancel()
	}
}
