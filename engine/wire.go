package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// The wire request of a model call is the body the engine sent, exactly:
// for an HTTP engine, the bytes its SDK serialised, taken at the HTTP
// transport (WireTransport); for an engine without HTTP, the rendering its
// documentation defines (RecordWireBody). The chain records its SHA-256,
// the rendering's version and the call's parameters in the event that
// closes the call (events.Wire), because the hash is known only once the
// request went out, after inference.started was committed. A call that
// failed before sending records none, which is the truth: nothing was
// sent. See docs/wire.md.

// WireRecorder collects the request of one model call. The chain puts one
// in the context of every call (WithWireRecorder); engines describe the
// call with DescribeWire and the body is recorded when it is sent.
type WireRecorder struct {
	mu   sync.Mutex
	wire events.Wire
	keep bool
	body []byte
	sent int
}

type wireKey struct{}

// WithWireRecorder returns ctx with a new recorder for one model call.
// With keepBody the recorder also keeps the body itself, for a caller that
// renders a call again to read it (`turnlog replay --wire`); a live call
// keeps only the hash.
func WithWireRecorder(ctx context.Context, keepBody bool) (context.Context, *WireRecorder) {
	r := &WireRecorder{keep: keepBody}
	return context.WithValue(ctx, wireKey{}, r), r
}

func wireRecorder(ctx context.Context) *WireRecorder {
	r, _ := ctx.Value(wireKey{}).(*WireRecorder)
	return r
}

// DescribeWire tells the call's recorder (if ctx has one) which rendering
// the engine uses (version, "<engine>/<n>", bumped whenever the engine
// renders a Turn differently) and the parameters of the call besides the
// Turn (model, options, tools), as the engine's JSON, from which the
// engine can render the call again. An engine calls it before it sends.
func DescribeWire(ctx context.Context, version string, params []byte) {
	if r := wireRecorder(ctx); r != nil {
		r.mu.Lock()
		r.wire.Version, r.wire.Params = version, string(params)
		r.mu.Unlock()
	}
}

// RecordWireBody records body as the request the call sent. HTTP engines
// need not call it (WireTransport does); an engine without HTTP calls it
// with the rendering it defines as its wire.
func RecordWireBody(ctx context.Context, body []byte) {
	r := wireRecorder(ctx)
	if r == nil {
		return
	}
	sum := sha256.Sum256(body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wire.SHA256 = hex.EncodeToString(sum[:])
	r.sent++
	if r.keep {
		r.body = bytes.Clone(body)
	}
}

// Wire is what the call recorded: empty when nothing was sent. A call
// whose engine sent a body without describing it (DescribeWire) records
// nothing either: a hash nobody can render again proves nothing.
func (r *WireRecorder) Wire() events.Wire {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.wire.SHA256 == "" || r.wire.Version == "" {
		return events.Wire{}
	}
	return r.wire
}

// Body is the last body sent, when the recorder keeps bodies; nil when
// none was sent.
func (r *WireRecorder) Body() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.body
}

// Sent counts the requests the call sent: 1 for every engine turnlog ships
// (their SDKs do not retry; the retry middleware makes a new call).
func (r *WireRecorder) Sent() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sent
}

// WireTransport wraps next (nil: http.DefaultTransport) so that the body
// of every request is recorded, as it goes to the server, in the recorder
// of the request's context: the bytes after the SDK serialised them, which
// are the bytes the server receives. The request is otherwise sent
// unchanged.
func WireTransport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return wireTransport{next: next}
}

type wireTransport struct{ next http.RoundTripper }

func (t wireTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if wireRecorder(req.Context()) == nil || req.Body == nil || req.Body == http.NoBody {
		return t.next.RoundTrip(req)
	}
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read the request body to record it: %w", err)
	}
	RecordWireBody(req.Context(), body)
	// A RoundTripper must not change the request it is given: send a
	// copy whose body is the bytes just read.
	out := req.Clone(req.Context())
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	return t.next.RoundTrip(out)
}

// WireClient returns a copy of c (nil: a new client) whose transport is
// wrapped with WireTransport, for an engine's SDK to send with.
func WireClient(c *http.Client) *http.Client {
	var out http.Client
	if c != nil {
		out = *c
	}
	out.Transport = WireTransport(out.Transport)
	return &out
}

// ErrNotSent is what the transport of a dry run (NotSending) answers: the
// request was recorded and deliberately not sent.
var ErrNotSent = fmt.Errorf("request recorded and not sent")

// NotSending is a transport that sends nothing and fails every request
// with ErrNotSent. With an engine's own code and SDK in front of it
// (WireClient), it makes the exact body of a call without reaching a
// server: what `turnlog replay --wire` renders.
func NotSending() http.RoundTripper { return notSending{} }

// RenderRequest is the body e's own code and SDK make for in, through a
// transport that sends nothing: the common end of every engine's
// WireRenderFunc. e must have been made with NotSending as its HTTP
// transport; an engine that answers anyway is an error.
func RenderRequest(ctx context.Context, e Engine, in Input) ([]byte, error) {
	ctx, rec := WithWireRecorder(ctx, true)
	_, err := e.Infer(ctx, in, nil)
	if body := rec.Body(); body != nil && errors.Is(err, ErrNotSent) {
		return body, nil
	}
	if err == nil {
		err = errors.New("the engine answered without sending")
	}
	return nil, err
}

type notSending struct{}

func (notSending) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
	return nil, ErrNotSent
}

// BlockNote says what became of one block of a call's input in the
// request an engine rendered, where the request does not show it plainly:
// a block not sent (and why), merged into another message, or moved (a
// system prompt sent in a field of its own). `turnlog replay --inference
// N` shows these beside the blocks, so that an auditor reading the Turn
// is not misled about what the model received.
type BlockNote struct {
	// Index is the block's position in the input Turn, ID its ID.
	Index int    `json:"index"`
	ID    string `json:"id"`
	// Sent is false for a block the request does not carry at all.
	Sent bool `json:"sent"`
	// Note says what happened, e.g. "not sent: Chat Completions has no
	// input for reasoning".
	Note string `json:"note"`
}

// WireRenderFunc renders the request of a recorded model call again, from
// the parameters the call recorded (events.Wire's Params, as the engine's
// JSON) and its input Turn re-projected from the log: the body, and what
// became of the blocks the body does not show plainly. An engine
// registers one for each rendering version it records
// (profile.WithWire), so that `turnlog replay --wire` and `--verify` of
// any binary that has the engine can render its calls; it must produce
// the very bytes the engine sent for that version, or every recorded call
// reads as a mismatch.
type WireRenderFunc func(ctx context.Context, params []byte, input *projector.Turn) ([]byte, []BlockNote, error)

// ErrUnknownRendering is returned (wrapped) by whatever renders recorded
// calls again for a rendering version it does not know: a call recorded by
// an engine this build does not have, or by a newer turnlog.
var ErrUnknownRendering = errors.New("unknown wire rendering")
