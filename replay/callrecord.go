package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// CallRecord is what the log holds of one model call, enough to render the
// request it sent again: its inference.started, its input rebuilt from the
// log, and how it ended.
type CallRecord struct {
	// Call numbers the call from 1; N is the position of its
	// inference.started.
	Call    int
	N       int
	Started events.InferenceStarted
	// Input is the call's input, re-projected (nil when the log cannot
	// rebuild it); its Data is the conversation's at the call, where the
	// gateway keeps request parameters.
	Input *projector.Turn
	// Closed is the event that closed the call (inference.finished or
	// inference.failed), nil while it is open.
	Closed events.Payload
}

// Wire is the request the call's closing event recorded (a worker's
// engine records it there), empty when none.
func (c *CallRecord) Wire() events.Wire {
	switch p := c.Closed.(type) {
	case events.InferenceFinished:
		return p.Wire
	case events.InferenceFailed:
		return p.Wire
	}
	return events.Wire{}
}

// CallAt re-projects a conversation up to its model call number call and
// reads on to the event that closed it. A call the conversation does not
// have is an eventlog.ErrNotFound that says how many it has.
func CallAt(ctx context.Context, src Source, conversation string, call int, opts ...Option) (*CallRecord, error) {
	o := collect(opts)
	o.quarantine = func(*eventlog.CorruptMessageError) error { return nil }
	var rec *CallRecord
	index := 0
	_, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		switch p := r.Payload.(type) {
		case events.InferenceStarted:
			index++
			if index == call {
				rec = &CallRecord{Call: call, N: r.Pos, Started: p}
				if in := callInput(w, p, r.Pos); in != nil {
					rec.Input = in.Clone()
				}
			}
		case events.InferenceFinished:
			if rec != nil && rec.Closed == nil && p.InferenceID == rec.Started.InferenceID {
				rec.Closed = p
			}
		case events.InferenceFailed:
			if rec != nil && rec.Closed == nil && p.InferenceID == rec.Started.InferenceID {
				rec.Closed = p
			}
		}
		if rec != nil && rec.Closed != nil {
			return errStop
		}
		return w.apply(r)
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("call %d of %s: %w", call, conversation, err)
	}
	if rec == nil {
		return nil, fmt.Errorf("call %d of %s: %w: the conversation has %d model calls; use a number from 1 to %d",
			call, conversation, eventlog.ErrNotFound, index, index)
	}
	return rec, nil
}

// GatewayRequest renders again the request of a call the recording
// gateway recorded, in the canonical form (JCS) its input hash is of; ok
// is false for a call the gateway did not record. Matches reports whether
// the rendering hashes to the recorded input hash. The client's own bytes
// are recorded only by their SHA-256 (the gateway's wire_sha256): they
// differ from this form in spacing and member order, never in content.
func GatewayRequest(rec *CallRecord) (body []byte, matches, ok bool, err error) {
	p := rec.Started
	if p.Gateway == nil {
		return nil, false, false, nil
	}
	if p.Gateway["unparsed"] != "" {
		return nil, false, true, fmt.Errorf("the gateway could not read this call's request (%s): only its SHA-256 is recorded", safe(p.Gateway["unparsed"]))
	}
	api, err := calls.ParseAPI(p.Gateway["api"])
	if err != nil {
		return nil, false, true, err
	}
	if rec.Input == nil {
		return nil, false, true, fmt.Errorf("the call's input cannot be rebuilt from the log (see replay --verify)")
	}
	body, err = calls.Render(api, rec.Input.Blocks, rec.Input.Data, p.Gateway["params"])
	if err != nil {
		return nil, false, true, fmt.Errorf("its request cannot be rendered from the log: %w", err)
	}
	sum := sha256.Sum256(body)
	return body, calls.HashPrefix+hex.EncodeToString(sum[:]) == p.InputHash, true, nil
}
