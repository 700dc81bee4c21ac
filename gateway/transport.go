package gateway

// The transport a recorded call goes upstream by: it notes when the call
// left, starts the call's recording once the upstream has it, and gives
// up on an upstream that does not begin to answer in time.

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptrace"
	"time"
)

// timedTransport notes when a recorded call is sent upstream, and gives
// up on an upstream whose answer does not begin within timeout.
type timedTransport struct {
	next    http.RoundTripper
	timeout time.Duration
}

// errUpstreamTimeout is an upstream that did not begin to answer in time.
type errUpstreamTimeout struct{ d time.Duration }

func (e errUpstreamTimeout) Error() string {
	return fmt.Sprintf("the upstream did not begin to answer within %v (--upstream-timeout)", e.d)
}

func (t timedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(r.Context())
	if st := stateOf(r.Context()); st != nil {
		st.upstreamStart = time.Now()
		if p := st.pending; p != nil {
			// The call is read and recorded once the upstream has it
			// (see Call.Deferred), or once it cannot.
			ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { p.Start() }})
			defer p.Start()
		}
	}
	timer := time.AfterFunc(t.timeout, cancel)
	resp, err := t.next.RoundTrip(r.WithContext(ctx))
	if !timer.Stop() && err != nil && r.Context().Err() == nil {
		return nil, errUpstreamTimeout{t.timeout}
	}
	return resp, err
}
