package cli

import (
	"context"
	"fmt"
	"time"
)

// noticeOutage watches chat's connection while a request is under way: once
// it has been down for c.outageNotice, chat says on stderr that it waits
// for NATS (the request goes out, or its answer is read, when the server is
// back), and says so again when the connection returns. Without it a
// message typed while the server was down sat with no output at all. The
// returned stop ends the watch.
func (c *chatClient) noticeOutage(ctx context.Context) (stop func()) {
	if c.nc == nil || c.outageNotice <= 0 {
		return func() {}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		var downSince time.Time
		said := false
		for {
			if url := c.nc.ConnectedUrlRedacted(); c.nc.IsConnected() && url != "" {
				if said {
					fmt.Fprintf(c.errOut, "turnlog: connected to NATS at %s again\n", url)
					said = false
				}
				c.lastURL, downSince = url, time.Time{}
			} else {
				if downSince.IsZero() {
					downSince = time.Now()
				}
				if !said && time.Since(downSince) >= c.outageNotice {
					fmt.Fprintf(c.errOut, "turnlog: waiting for NATS at %s…\n", c.lastURL)
					said = true
				}
			}
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
