package replay

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/projector"
)

// Checked is the result of Check. Its JSON form is the stable output of
// `turnlog replay --check -o json`.
type Checked struct {
	Conversation string `json:"conversation"`
	// Calls counts the model calls checked (inference.started events),
	// Chained among them included.
	Calls int `json:"calls"`
	// Chained counts the calls that continued a history the provider
	// holds (previous_response_id): checked on what they sent only, not
	// for the rules of check.ChainedSkips. Omitted when none.
	Chained int `json:"chained,omitempty"`
	// Unparsed counts the calls whose request the recording gateway
	// could not read (gateway.unparsed: not JSON, not the API's shape,
	// ambiguous member names, too costly or too large): the log holds
	// them by the SHA-256 of their bytes alone, so what they sent was not
	// checked. Counted in Calls; omitted when none.
	Unparsed int `json:"unparsed,omitempty"`
	// Findings lists each rule a model input broke, in call order; never
	// null. A fault that later inputs still carry is listed once, at the
	// call that first received it. Findings on the Turn no model call has
	// received yet (an import's blocks, what came after the last call)
	// come last, with call 0 (check.PendingCall) and n the position of
	// the conversation's last event.
	Findings []check.Finding `json:"findings"`
	// Wire lists, per model call whose request was rendered again (Check
	// given WithWire, and the engine's rendering known), what became of
	// the input's blocks the request does not show plainly (not sent,
	// merged, in a field of their own): what `replay --inference N`
	// shows beside the blocks. Omitted when none.
	Wire []CallWire `json:"wire,omitempty"`
	// WireUnchecked counts the model calls whose recorded request could
	// not be rendered again (a rendering this build does not know, or an
	// error), so their request as sent was not checked.
	WireUnchecked int `json:"wire_unchecked,omitempty"`
}

// CallWire is what one model call's request did with the input's blocks.
type CallWire struct {
	Call  int                `json:"call"`
	N     int                `json:"n"`
	Notes []engine.BlockNote `json:"notes"`
}

// sentCall is a model call whose request is to be checked at its closing
// event, where the wire parameters are recorded.
type sentCall struct {
	call, n int
	turn    *projector.Turn
}

// OK reports whether every model input kept every rule.
func (c *Checked) OK() bool { return len(c.Findings) == 0 }

// NewChecker returns a check.Checker that also checks the calls whose
// input was built from part of the Turn (a compaction's summary), on the
// input replay rebuilds for them: what Check, the timeline and `turnlog
// ls` use.
func NewChecker() *check.Checker {
	return check.New(check.WithAsideInput(func(t *projector.Turn, p events.InferenceStarted) (*projector.Turn, error) {
		in, _, err := asideInput(t, p, 0)
		return in, err
	}))
}

// Check re-projects a conversation and applies the rules of package check
// to every model input: the Turn at each inference.started (or the input
// rebuilt for a call on part of it). A message that is not one of the
// conversation's steps is skipped, as the timeline shows it; an event that
// cannot be folded is an error, since nothing after it can be checked
// (`replay --verify` names it).
func Check(ctx context.Context, src Source, conversation string, opts ...Option) (*Checked, error) {
	o := collect(opts)
	o.quarantine = func(*eventlog.CorruptMessageError) error { return nil }
	out := &Checked{Conversation: conversation, Findings: []check.Finding{}}
	c := NewChecker()
	last := -1
	open := map[string]sentCall{}
	w, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		if err := w.apply(r); err != nil {
			return err
		}
		last = r.Pos
		if p, ok := r.Event.Payload.(events.InferenceStarted); ok && p.Gateway["unparsed"] != "" {
			out.Unparsed++
		}
		out.Findings = append(out.Findings, c.Observe(r.Event, r.Pos, w.turn)...)
		if o.wire != nil {
			out.checkWire(ctx, o.wire, c, open, r, w.turn)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", conversation, err)
	}
	out.Calls, out.Chained = c.Calls(), c.Chained()
	if w != nil && last >= 0 {
		// What no model call has received yet: an import's blocks, or
		// what came after the last call (call 0, check.PendingCall).
		out.Findings = append(out.Findings, c.Pending(last, w.turn)...)
	}
	// Wire findings come at each call's closing event: in call order,
	// those of what no call received last.
	slices.SortStableFunc(out.Findings, func(a, b check.Finding) int {
		ka, kb := a.Call, b.Call
		if ka == check.PendingCall {
			ka = math.MaxInt
		}
		if kb == check.PendingCall {
			kb = math.MaxInt
		}
		return cmp.Compare(ka, kb)
	})
	return out, nil
}

// checkWire keeps the input of each model call that received the Turn,
// and at the event that closes it renders its recorded request again with
// rd: the blocks the request did not show plainly go to c.Wire, and the
// rules of one input are applied to what the request carried
// (check.Checker.Sent). A call on part of the Turn (a compaction's
// summary) is not checked this way.
func (c *Checked) checkWire(ctx context.Context, rd WireRenderer, ch *check.Checker, open map[string]sentCall, r *eventlog.Record, turn *projector.Turn) {
	if p, ok := r.Payload.(events.InferenceStarted); ok {
		if p.Instructions == "" && len(p.InputBlocks) == 0 {
			open[p.InferenceID] = sentCall{call: ch.Calls(), n: r.Pos,
				turn: &projector.Turn{Blocks: slices.Clone(turn.Blocks), Data: maps.Clone(turn.Data)}}
		}
		return
	}
	id, wire, closes := closedCall(r.Payload)
	if !closes {
		return
	}
	sc, ok := open[id]
	if !ok {
		return
	}
	delete(open, id)
	if wire.IsZero() {
		return // nothing was sent, or recorded before wire hashes were
	}
	if !rd.Knows(wire.Version) {
		c.WireUnchecked++
		return
	}
	_, notes, err := rd.RenderWire(ctx, wire, sc.turn)
	if err != nil {
		c.WireUnchecked++
		return
	}
	if len(notes) > 0 {
		c.Wire = append(c.Wire, CallWire{Call: sc.call, N: sc.n, Notes: notes})
	}
	dropped := map[int]bool{}
	for _, nt := range notes {
		if !nt.Sent {
			dropped[nt.Index] = true
		}
	}
	c.Findings = append(c.Findings, ch.Sent(sc.call, sc.n, sc.turn.Blocks, func(i int) bool { return !dropped[i] })...)
}

// WriteText prints the findings, one paragraph per finding, for a person.
func (c *Checked) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s checked", c.Conversation, plural.Count(c.Calls-c.Chained-c.Unparsed, "model call"))
	if c.Unparsed > 0 {
		// A call the gateway could not read sent what the log holds only
		// by its hash: "no findings" must not pass for its having none.
		fmt.Fprintf(&b, ", %s not checked (the gateway could not read the request: the log holds its bytes' SHA-256 alone; replay --inference N says why)",
			plural.Count(c.Unparsed, "model call"))
	}
	if c.Chained > 0 {
		// Not counted as checked for rules it was not judged by.
		skips := make([]string, len(check.ChainedSkips))
		for i, r := range check.ChainedSkips {
			skips[i] = string(r)
		}
		they := "it"
		if c.Chained > 1 {
			they = "they"
		}
		fmt.Fprintf(&b, ", %s checked only on what %s sent (the provider holds the history: not for %s)",
			plural.Count(c.Chained, "chained call"), they, strings.Join(skips, ", "))
	}
	if c.OK() {
		b.WriteString(", no findings\n")
	} else {
		fmt.Fprintf(&b, ", %s\n", plural.Count(len(c.Findings), "finding"))
	}
	for _, f := range c.Findings {
		// Details and IDs may come from an untrusted import: escaped.
		if f.Call == check.PendingCall {
			fmt.Fprintf(&b, "\nnot yet sent to a model (Turn at event %d): %s\n  %s\n", f.N, f.Rule, safe(f.Detail))
		} else {
			fmt.Fprintf(&b, "\nmodel call #%d (event %d): %s\n  %s\n", f.Call, f.N, f.Rule, safe(f.Detail))
		}
		if len(f.Blocks) > 0 {
			fmt.Fprintf(&b, "  blocks: %s\n", safe(strings.Join(f.Blocks, ", ")))
		}
		if f.Call == check.PendingCall {
			fmt.Fprintf(&b, "  see: turnlog replay --at %d %s\n", f.N, events.CommandArg(c.Conversation))
		} else {
			fmt.Fprintf(&b, "  see: turnlog replay --inference %d %s\n", f.Call, events.CommandArg(c.Conversation))
		}
	}
	for _, cw := range c.Wire {
		fmt.Fprintf(&b, "\nmodel call #%d (event %d): the request did not carry every block as the Turn holds it\n", cw.Call, cw.N)
		for _, nt := range cw.Notes {
			fmt.Fprintf(&b, "  block %s at index %d -> %s\n", safe(nt.ID), nt.Index, safe(nt.Note))
		}
	}
	if c.WireUnchecked > 0 {
		fmt.Fprintf(&b, "\n%s not checked as sent: the request could not be rendered again (a rendering this build does not know)\n",
			plural.Count(c.WireUnchecked, "model call"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
