package gateway

import (
	"bytes"
	"context"
	"errors"
	"io"
	"time"

	"github.com/turnlog/turnlog/calls"
)

// tee is a response body on its way to the client: every byte passes
// through as it came (a stream's events as they arrive), and a copy is
// read to record the call. The call's outcome is recorded, and
// acknowledged by JetStream, before the response's last byte is handed
// on: a JSON body's last byte is held back until its end is known; a
// stream's final event is recorded before the piece that holds it is
// passed on. If the outcome cannot be recorded, the response is cut, so a
// client never gets a whole answer the log does not hold.
type tee struct {
	body   io.ReadCloser
	st     *state
	sse    bool
	status int
	limit  int
	// keep: the response's bytes are kept, a stream's too (up to limit),
	// for the spool.
	keep   bool
	finish func(calls.Outcome) error
	// disconnected says why the response ended early when the client's
	// side ended (Gateway.disconnected; nil: its client went away).
	disconnected func(what string) string

	stream  *calls.Stream
	buf     bytes.Buffer
	over    bool
	pending []byte // the held-back last byte
	done    bool
	endErr  error
}

func newTee(body io.ReadCloser, st *state, sse bool, status, limit int, keep bool, finish func(calls.Outcome) error) *tee {
	t := &tee{body: body, st: st, sse: sse, status: status, limit: limit, keep: keep, finish: finish}
	if sse && status < 300 {
		t.stream = calls.NewStream(st.api, limit)
	}
	return t
}

func (t *tee) observe(p []byte) {
	if t.stream != nil {
		t.stream.Write(p)
		if !t.keep {
			return
		}
	}
	if t.buf.Len()+len(p) > t.limit {
		t.over = true
		return
	}
	t.buf.Write(p)
}

func (t *tee) Read(p []byte) (int, error) {
	if t.done {
		if len(t.pending) > 0 && len(p) > 0 {
			p[0] = t.pending[0]
			t.pending = nil
			return 1, nil
		}
		return 0, t.endErr
	}
	off := copy(p, t.pending)
	t.pending = nil
	n, err := t.body.Read(p[off:])
	t.observe(p[off : off+n])
	total := off + n
	switch {
	case err == io.EOF:
		if rerr := t.end(); rerr != nil {
			return 0, rerr
		}
		t.done, t.endErr = true, io.EOF
		return total, nil
	case err != nil:
		reason := "the upstream's response was cut: " + err.Error()
		if errors.Is(err, context.Canceled) {
			reason = t.disconnectedReason()
		}
		t.fail(reason)
		return total, err
	}
	if t.stream != nil {
		if t.stream.Done() && !t.st.done() {
			if rerr := t.end(); rerr != nil {
				return 0, rerr
			}
		}
		return total, nil
	}
	if total > 0 {
		t.pending = []byte{p[total-1]}
		total--
	}
	return total, nil
}

// end records the call's outcome when the response is complete.
func (t *tee) end() error {
	if t.st.done() {
		return nil
	}
	t.st.upstream = time.Since(t.st.upstreamStart)
	o := calls.Outcome{Duration: time.Since(t.st.started)}
	switch {
	case t.status >= 300:
		// The body is without the call's credentials already (maskKeys,
		// before the tee), so a key is not cut in two with the reason.
		o.Failure = statusFailure(t.status, t.buf.Bytes())
		o.Transient, o.Refused = t.status == 429 || t.status >= 500, true
	case t.stream != nil:
		out, err := t.stream.Output()
		if err != nil {
			o.Failure = "the response cannot be read: " + err.Error()
		} else {
			o.Output = out
		}
		if !t.stream.Complete() {
			o.Failure = "the stream ended before its final event"
		}
	case t.over:
		o.Failure = "the response is larger than the gateway's --max-body; it reached the client but is not recorded"
	case t.st.parsed():
		out, err := calls.ParseResponse(t.st.api, t.buf.Bytes())
		if err != nil {
			o.Failure = "the response cannot be read: " + err.Error()
		} else {
			o.Output = out
		}
	default:
		// A request the gateway could not read, which the provider
		// answered: its answer is recorded when it is the API's shape, as
		// a stream's is. One that is not says nothing of the call's
		// success (the app got it as it came), so the call stays finished.
		if out, err := calls.ParseResponse(t.st.api, t.buf.Bytes()); err == nil {
			o.Output = out
		}
	}
	if err := t.finish(o); err != nil {
		return errors.New("turnlog could not record the call, so its response is cut: " + err.Error())
	}
	return nil
}

// fail records the call failed for reason (the upstream's response cut,
// the client gone), with what a stream had delivered until then as its
// partial output.
func (t *tee) fail(reason string) {
	if t.st.done() {
		return
	}
	o := calls.Outcome{Failure: reason, Transient: true, Duration: time.Since(t.st.started)}
	if t.stream != nil {
		if out, err := t.stream.Output(); err == nil {
			o.Output = out
		}
	}
	_ = t.finish(o)
}

// Close records a response the client stopped reading (it disconnected).
func (t *tee) Close() error {
	if !t.st.done() {
		t.fail(t.disconnectedReason())
	}
	return t.body.Close()
}

// disconnectedReason is why a response its client stopped reading ended.
func (t *tee) disconnectedReason() string {
	if t.disconnected == nil {
		return "the client disconnected before the response ended"
	}
	return t.disconnected("the response ended")
}
