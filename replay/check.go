package replay

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/projector"
)

// Checked is the result of Check. Its JSON form is the stable output of
// `turnlog replay --check -o json`.
type Checked struct {
	Conversation string `json:"conversation"`
	// Calls counts the model calls checked (inference.started events).
	Calls int `json:"calls"`
	// Findings lists each rule a model input broke, in call order; never
	// null. A fault that later inputs still carry is listed once, at the
	// call that first received it. Findings on the Turn no model call has
	// received yet (an import's blocks, what came after the last call)
	// come last, with call 0 (check.PendingCall) and n the position of
	// the conversation's last event.
	Findings []check.Finding `json:"findings"`
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
	w, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		if err := w.apply(r); err != nil {
			return err
		}
		last = r.Pos
		out.Findings = append(out.Findings, c.Observe(r.Event, r.Pos, w.turn)...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("check %s: %w", conversation, err)
	}
	out.Calls = c.Calls()
	if w != nil && last >= 0 {
		// What no model call has received yet: an import's blocks, or
		// what came after the last call (call 0, check.PendingCall).
		out.Findings = append(out.Findings, c.Pending(last, w.turn)...)
	}
	return out, nil
}

// WriteText prints the findings, one paragraph per finding, for a person.
func (c *Checked) WriteText(w io.Writer) error {
	var b strings.Builder
	if c.OK() {
		fmt.Fprintf(&b, "%s: %s checked, no findings\n", c.Conversation, plural.Count(c.Calls, "model call"))
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "%s: %s checked, %s\n", c.Conversation, plural.Count(c.Calls, "model call"), plural.Count(len(c.Findings), "finding"))
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
			fmt.Fprintf(&b, "  see: turnlog replay --at %d %s\n", f.N, c.Conversation)
		} else {
			fmt.Fprintf(&b, "  see: turnlog replay --inference %d %s\n", f.Call, c.Conversation)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
