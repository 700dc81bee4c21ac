package natstest

import (
	"fmt"
	"sync"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/turnlog/turnlog/internal/freeport"
)

// pickPorts finds a cluster's ports (freeport.Ports); a test of the
// retry replaces it.
var pickPorts = freeport.Ports

// listenWatch is a server.Logger that remembers the server's fatal errors
// (in an embedded server, a port it could not listen on is reported only
// there, and the server never becomes ready) and passes every line on to
// next, when there is one.
type listenWatch struct {
	next  server.Logger
	mu    sync.Mutex
	fatal string
}

// failure is the first fatal error the server reported, or "".
func (w *listenWatch) failure() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fatal
}

func (w *listenWatch) Fatalf(format string, v ...any) {
	w.mu.Lock()
	if w.fatal == "" {
		w.fatal = fmt.Sprintf(format, v...)
	}
	w.mu.Unlock()
	if w.next != nil {
		w.next.Errorf(format, v...) // the file logger's Fatalf would exit the test binary
	}
}

func (w *listenWatch) Noticef(format string, v ...any) {
	if w.next != nil {
		w.next.Noticef(format, v...)
	}
}

func (w *listenWatch) Warnf(format string, v ...any) {
	if w.next != nil {
		w.next.Warnf(format, v...)
	}
}

func (w *listenWatch) Errorf(format string, v ...any) {
	if w.next != nil {
		w.next.Errorf(format, v...)
	}
}

func (w *listenWatch) Debugf(format string, v ...any) {
	if w.next != nil {
		w.next.Debugf(format, v...)
	}
}

func (w *listenWatch) Tracef(format string, v ...any) {
	if w.next != nil {
		w.next.Tracef(format, v...)
	}
}
