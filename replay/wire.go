package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// WireRenderer renders the request of a recorded model call again, from
// what its closing event recorded (events.Wire: rendering version and
// parameters) and its input Turn, re-projected from the log. It is
// implemented where the engines are (engine/wire), so that package replay
// needs no provider SDK: a caller that has the engines passes one with
// WithWire.
type WireRenderer interface {
	// Knows reports whether the renderer can render version.
	Knows(version string) bool
	// RenderWire returns the body and what became of the blocks the body
	// does not show plainly.
	RenderWire(ctx context.Context, wire events.Wire, input *projector.Turn) ([]byte, []engine.BlockNote, error)
}

// WithWire makes Verify check every recorded wire request too: rendered
// again with r, it must hash to what the call recorded.
func WithWire(r WireRenderer) Option { return func(o *options) { o.wire = r } }

// FieldWire: the request rendered again from the log does not hash to the
// wire_sha256 the call's closing event recorded, or cannot be rendered:
// the engine's rendering or its SDK's serialisation changed since the
// call (the rendering's version should have changed with it), or the log
// was altered.
const FieldWire = "wire_sha256"

// WireSHA256 is the hash recorded calls' wire_sha256 is made with.
func WireSHA256(body []byte) string {
	sum := sha256.Sum256(body)
	return hex.EncodeToString(sum[:])
}

// wireJob is a recorded wire request to check, at the closing event n.
type wireJob struct {
	ctx  context.Context
	r    WireRenderer
	wire events.Wire
	n    int
	seq  uint64
}

// checkWire renders the call's request again and compares its hash.
func (j checkJob) checkWire() []Mismatch {
	w := j.wire
	where := fmt.Sprintf("model call #%d (event %d; closed at event %d, seq %d)", j.index, j.pos, w.n, w.seq)
	m := Mismatch{N: w.n, Seq: w.seq, Inference: j.index, InferenceID: j.p.InferenceID, Field: FieldWire, Recorded: w.wire.SHA256}
	body, _, err := w.r.RenderWire(w.ctx, w.wire, j.turn)
	if err != nil {
		m.Message = fmt.Sprintf("%s: the request (rendering %s) cannot be rendered again from the log: %v", where, quote(w.wire.Version), err)
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			m.Message = where + ": not checked: " + err.Error()
		}
		return []Mismatch{m}
	}
	if m.Computed = WireSHA256(body); m.Computed == w.wire.SHA256 {
		return nil
	}
	m.Message = fmt.Sprintf("%s: the request rendered again from the log hashes to %s, the call recorded %s (rendering %s): "+
		"the engine's rendering or its SDK changed since the call, or the log was altered; the input hash is checked apart",
		where, m.Computed, w.wire.SHA256, quote(w.wire.Version))
	return []Mismatch{m}
}

// wireCheck returns the job that checks the wire request r records, when
// r closes a call in calls with one and the renderer knows its rendering;
// it counts the request in v either way.
func wireCheck(ctx context.Context, rd WireRenderer, calls map[string]checkJob, r *eventlog.Record, v *Verification) (checkJob, bool) {
	id, wire, closes := closedCall(r.Payload)
	if !closes {
		return checkJob{}, false
	}
	job, ok := calls[id]
	if !ok {
		return checkJob{}, false
	}
	delete(calls, id)
	if wire.IsZero() {
		return checkJob{}, false
	}
	if !rd.Knows(wire.Version) {
		v.WiresUnchecked++
		if !slices.Contains(v.UncheckedRenderings, wire.Version) {
			v.UncheckedRenderings = append(v.UncheckedRenderings, wire.Version)
		}
		return checkJob{}, false
	}
	v.Wires++
	job.wire = &wireJob{ctx: ctx, r: rd, wire: wire, n: r.Pos, seq: r.Seq}
	return job, true
}
