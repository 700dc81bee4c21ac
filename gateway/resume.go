package gateway

// An import that stopped while it recorded a call (a crash, NATS gone)
// left the call noted pending in the conversation it was going to
// (Threads.ImportPending): the next import of the same file looks there
// for what of the call was stored and stores only the rest, so a call is
// never recorded twice, nor half.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// storedCall is what a conversation holds of an imported call.
type storedCall struct {
	id        string // its inference ID
	threading string
	started   int  // the position of its inference.started
	finished  bool // its outcome (its step 1) is stored too
	// findings are what the call's checks find at its input, for an
	// outcome stored now (they belong in the outcome's step).
	findings []events.Payload
}

// resumeImport looks in conv for the imported call named key that an
// earlier import began to record. found is false when conv holds nothing
// of it: the caller records it as usual. A call whose input alone was
// stored gets its outcome now.
func (r *Recorder) resumeImport(ctx context.Context, conv, key string, l *calls.Logged) (res Imported, found bool, err error) {
	c, err := r.storedImport(ctx, conv, key)
	if err != nil || c == nil {
		return Imported{}, false, err
	}
	res = Imported{Conversation: conv, Threading: c.threading, Status: StatusUnchanged}
	if !c.finished {
		if err := r.finishStored(ctx, conv, c, key, l); err != nil {
			return Imported{}, false, err
		}
		res.Status = StatusRecorded
	}
	if err := r.threads.RecordImported(ctx, key, conv); err != nil {
		return Imported{}, false, err
	}
	return res, true, nil
}

// storedImport reads conv for the imported call named key: nil when it
// holds none of it.
func (r *Recorder) storedImport(ctx context.Context, conv, key string) (*storedCall, error) {
	return r.storedCallOf(ctx, conv, func(p events.InferenceStarted) bool { return p.Gateway["import"] == key })
}

// storedCallOf reads conv for the first call whose inference.started is
// one of: nil when it holds none. The conversation is folded and checked
// on the way, so that the call's findings are known should its outcome be
// stored now.
func (r *Recorder) storedCallOf(ctx context.Context, conv string, is func(events.InferenceStarted) bool) (*storedCall, error) {
	el, ok := r.log.(eventsLog)
	if !ok {
		return nil, errors.New("resume a call: the log cannot be read")
	}
	turn := projector.New(conv)
	var fed *check.Fed
	if r.check {
		fed = &check.Fed{Conversation: conv, Checker: check.New()}
	}
	var c *storedCall
	for rec, err := range el.Events(ctx, conv) {
		if err != nil {
			return nil, fmt.Errorf("resume a call in %s: %w", conv, err)
		}
		e := rec.Event
		if err := projector.Apply(turn, e); err != nil {
			return nil, fmt.Errorf("resume a call in %s: %w", conv, err)
		}
		var fs []check.Finding
		if fed != nil {
			fs = fed.Observe(e, turn)
		}
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			if c == nil && is(p) {
				c = &storedCall{id: p.InferenceID, threading: p.Gateway["threading"], started: turn.Events}
				for _, x := range fs {
					c.findings = append(c.findings, events.FindingRecorded{InferenceID: p.InferenceID, Rule: string(x.Rule), Detail: x.Detail, Blocks: x.Blocks})
				}
			}
		}
		if c != nil && e.Cause == c.id && e.Step >= 1 {
			// Its outcome's step: inference.finished or .failed, or a
			// background call's note of the response it waits for.
			c.finished = true
		}
	}
	return c, nil
}

// finishStored records the outcome of a call whose input conv holds, as
// Finish records a live call's, against the conversation as the log has
// it now.
func (r *Recorder) finishStored(ctx context.Context, conv string, c *storedCall, key string, l *calls.Logged) error {
	turn, err := r.log.Load(ctx, conv)
	if err != nil {
		return fmt.Errorf("resume a call in %s: %w", conv, err)
	}
	call := &calls.Call{ID: c.id, API: l.API, Time: l.Time, Import: key, Threading: c.threading}
	if req, err := r.parse.ParseRequest(l.API, l.Request); err == nil {
		call.Request = req
	}
	p := &Pending{conv: conv, threading: c.threading, parsed: call.Request != nil, ready: make(chan struct{}), call: call,
		api: l.API, started: time.Now(), input: make(chan inputResult, 1), resumed: true}
	close(p.ready)
	p.input <- inputResult{turn: turn, atStart: turn.Events, started: c.started, findings: c.findings}
	return r.Finish(ctx, p, l.Outcome())
}
