package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/calls"
)

// Forwarding to the provider and what comes back: the reverse proxy to
// each upstream, the answer marked and recorded as it passes, and the
// reasons a call that got no whole answer is recorded with.

// disconnected is the reason a call failed when its request's context
// ended before what (the upstream's answer, the response's end): its
// client went away, or, once the gateway is stopping, the shutdown may
// have closed the connection.
func (g *Gateway) disconnected(what string) string {
	if g.stopping.Load() {
		return "turnlog's gateway was shutting down: it closed the connection before " + what + ", once the calls in flight had had their grace to end (or the client disconnected meanwhile)"
	}
	return "the client disconnected before " + what
}

// proxy forwards to base. An OpenAI base URL ends with /v1 as its SDK
// takes it, so the route's /v1 is dropped; Anthropic's does not.
func (g *Gateway) proxy(base string, dropV1 bool, transport http.RoundTripper) (*httputil.ReverseProxy, error) {
	u, err := url.Parse(base)
	if err != nil {
		return nil, err
	}
	return &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			path := pr.In.URL.Path
			if dropV1 {
				path = strings.TrimPrefix(path, "/v1")
			}
			pr.Out.URL.Scheme, pr.Out.URL.Host = u.Scheme, u.Host
			pr.Out.URL.Path = strings.TrimSuffix(u.Path, "/") + path
			pr.Out.URL.RawPath = ""
			pr.Out.Host = u.Host
			stripTurnlog(pr.Out.Header)
			// The response is read to be recorded: it must come as the
			// provider wrote it, not compressed for the client.
			pr.Out.Header.Del("Accept-Encoding")
			// The body is read already (a client's Expect: 100-continue
			// was answered by this server): asked to wait for the
			// upstream's 100 Continue, the transport would hold it back
			// for up to a second where the upstream sends none.
			pr.Out.Header.Del("Expect")
		},
		Transport:  transport,
		BufferPool: copyBuffers,
		// What it logs (a body copy cut) goes to the gateway's log, one
		// JSON object a line as the rest, not to the standard logger.
		ErrorLog: slog.NewLogLogger(g.cfg.Logger.Handler(), slog.LevelWarn),
		// No FlushInterval: ReverseProxy flushes an event stream (and a
		// body of unknown length) after every write whatever it says,
		// and a JSON body needs no flush per read.
		ModifyResponse: g.modifyResponse,
		ErrorHandler:   g.upstreamError,
	}, nil
}

// modifyResponse marks the response with its conversation and wraps its
// body so that the call is recorded as it passes.
func (g *Gateway) modifyResponse(resp *http.Response) error {
	// The credentials the call sent upstream never come back to the app
	// nor go into the record: masked before the tee, so that the record
	// is what the app received.
	secrets := credentials(resp.Request.Header)
	maskHeaders(resp.Header, secrets)
	resp.Body = maskKeys(resp.Body, secrets)
	st := stateOf(resp.Request.Context())
	if st == nil {
		return nil // a path forwarded unrecorded
	}
	if st.pending != nil {
		if err := st.pending.inputRecorded(resp.Request.Context()); err != nil {
			return errUnrecorded{err}
		}
	}
	resp.Header.Set(ConversationHeader, st.conversation())
	resp.Header.Set("X-Accel-Buffering", "no")
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	st.tee = newTee(resp.Body, st, sse, resp.StatusCode, int(g.cfg.MaxBody), st.spooled != nil, func(o calls.Outcome) error {
		return st.finish(resp.Request.Context(), g, o)
	})
	st.tee.disconnected = g.disconnected
	resp.Body = st.tee
	return nil
}

// upstreamError answers a call the upstream never answered (unreachable,
// refused: 502; silent past --upstream-timeout: 504), and records it
// failed.
func (g *Gateway) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	st := stateOf(r.Context())
	anthropic := st != nil && st.anthropic
	reason := "the upstream did not answer: " + err.Error()
	if errors.Is(err, context.Canceled) {
		reason = g.disconnected("the upstream answered")
	}
	if st != nil && !st.done() {
		if ferr := st.finish(r.Context(), g, calls.Outcome{Failure: reason, Transient: true}); ferr != nil {
			g.cfg.Logger.Error("gateway: call not recorded", "conversation", st.conversation(), "err", ferr)
		}
	}
	if errors.Is(err, context.Canceled) {
		return
	}
	if st != nil {
		w.Header().Set(ConversationHeader, st.conversation())
	}
	if u := (errUnrecorded{}); errors.As(err, &u) {
		if unfoldable(u.err) {
			g.cfg.Metrics.errors.WithLabelValues("quarantined").Inc()
			writeError(w, anthropic, http.StatusUnprocessableEntity, "turnlog cannot record this call, so the provider's answer is withheld: "+u.err.Error())
			return
		}
		g.cfg.Metrics.errors.WithLabelValues("unavailable").Inc()
		writeError(w, anthropic, http.StatusServiceUnavailable, "turnlog could not record this call, so the provider's answer is withheld: "+u.err.Error()+"; retry shortly")
		return
	}
	var timeout errUpstreamTimeout
	if errors.As(err, &timeout) {
		g.cfg.Metrics.errors.WithLabelValues("upstream_timeout").Inc()
		writeError(w, anthropic, http.StatusGatewayTimeout, "turnlog's gateway: "+err.Error())
		return
	}
	g.cfg.Metrics.errors.WithLabelValues("upstream").Inc()
	// Reached or not: the connection may have failed before the request
	// went out, or after the provider took it (it may have done the work).
	writeError(w, anthropic, http.StatusBadGateway, "turnlog's gateway got no answer from the provider: "+err.Error())
}

// statusFailure is the reason a non-2xx answer records.
func statusFailure(status int, body []byte) string {
	msg := calls.ErrorMessage(body)
	if msg == "" {
		msg = strings.TrimSpace(string(body))
		if len(msg) > 200 {
			msg = msg[:200] + "…"
		}
	}
	text := http.StatusText(status)
	if text == "" && status == 529 {
		text = "Overloaded" // Anthropic's
	}
	if text != "" {
		text = " " + text
	}
	return "upstream answered " + strconv.Itoa(status) + text + ": " + msg
}
