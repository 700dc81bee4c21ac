package replay

// This file holds what Verify proves about who wrote what. Each step is
// stored on the subject of the role whose credential wrote it, which the
// server lets no other role publish to (eventlog.Record.Writer): that is
// the proof. An event's actor is what the writer claims; where the actor
// (or what the event does) is the operator's, the writer must be the
// admin.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// FieldWriter: the event's actor, or what it does, is an operator's
// action (an operator:* actor, an import, a fork, a repair, a prompt whose
// source is the operator or an import, a prompt lock), and its step was
// not stored by the admin.
const FieldWriter = "writer"

// adminWriter is the role that takes operator actions.
const adminWriter = "admin"

// Actors of operator actions, besides "operator:<name>" (the values of
// operator.ActorPrefix, chatfile.ActorImport, ActorFork and
// repair.ActorRepair, which replay does not import).
const (
	actorOperatorPrefix = "operator:"
	actorImport         = "import"
	actorRepair         = "repair"
)

// Systemprompt sources that only an operator action records.
var operatorSources = map[string]bool{"operator": true, "import": true}

// Provenance is a run of consecutive events of one actor, stored by one
// role, that no model call produced: an import, a fork, an operator's
// prompt (and, in a conversation without any model call, every run).
// Verify reports them: what the log proves of them is who stored them and
// when, not what a model received or answered.
type Provenance struct {
	// Actor is the events' actor, Writer the role that stored them ("":
	// unattributed, stored before roles were recorded).
	Actor  string `json:"actor"`
	Writer string `json:"writer"`
	// N and Seq locate the first event, Time is when it was written.
	N    int       `json:"n"`
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time"`
	// Events counts the events, Blocks the blocks they added.
	Events int `json:"events"`
	Blocks int `json:"blocks"`
	// operator: the events are an operator's action.
	operator bool
}

// operatorAction says why an event is an operator's action ("" when it is
// not): its step must be stored by the admin.
func operatorAction(r *eventlog.Record) string {
	switch {
	case strings.HasPrefix(r.Actor, actorOperatorPrefix):
		return "an operator's action (actor " + quote(r.Actor) + ")"
	case r.Actor == actorImport:
		return "an import"
	case r.Actor == ActorFork:
		return "a fork"
	case r.Actor == actorRepair:
		return "a repair"
	}
	switch p := r.Payload.(type) {
	case events.ConversationStarted:
		// The recording gateway forks where a client's call diverges
		// from a recorded state (threading by content): its own fork,
		// stored on the workers' subjects like the rest of its calls,
		// and shown as the gateway's, not as an operator's.
		if p.ForkedFrom != "" && r.Actor != calls.Actor {
			return "a fork (forked from " + quote(p.ForkedFrom) + ")"
		}
	case events.SystemPromptSet:
		if s := p.Meta[events.MetaSystemPromptSource]; operatorSources[s] {
			return "a system prompt of source " + quote(s)
		}
	case events.SystemPromptReplaced:
		if s := p.Meta[events.MetaSystemPromptSource]; operatorSources[s] {
			return "a system prompt of source " + quote(s)
		}
	case events.SystemPromptLocked, events.SystemPromptUnlocked:
		return "a prompt lock"
	case events.MessageRemoved:
		return "a repair"
	}
	return ""
}

// writers checks each event's writer against its actor as Verify reads
// them, and keeps the counts and provenances Verify reports.
type writers struct {
	counts       map[string]int
	unattributed int
	mismatches   []Mismatch
	runs         []Provenance
	// modelCalls: an inference.started was seen; from then on only the
	// runs of operator actions are kept.
	modelCalls bool
}

func newWriters() *writers { return &writers{counts: map[string]int{}} }

// check records r, which added added blocks to the Turn.
func (ws *writers) check(r *eventlog.Record, added int) {
	if r.Writer == "" {
		ws.unattributed++
	} else {
		ws.counts[r.Writer]++
	}
	if _, ok := r.Payload.(events.InferenceStarted); ok && !ws.modelCalls {
		ws.modelCalls = true
		ws.runs = slices.DeleteFunc(ws.runs, func(p Provenance) bool { return !p.operator })
	}
	why := operatorAction(r)
	if why == "" && ws.modelCalls {
		return // what the model calls prove
	}
	if why != "" && r.Writer != adminWriter && r.Writer != "" {
		ws.mismatches = append(ws.mismatches, Mismatch{N: r.Pos, Seq: r.Seq, Field: FieldWriter, Recorded: r.Actor, Computed: r.Writer,
			Message: fmt.Sprintf("event %d (seq %d, %s by %s) is %s, but its step was stored by the %s role: only the admin's credential takes operator actions",
				r.Pos, r.Seq, r.Type, quote(r.Actor), why, r.Writer)})
	}
	if n := len(ws.runs); n > 0 {
		if p := &ws.runs[n-1]; p.Actor == r.Actor && p.Writer == r.Writer && p.N+p.Events == r.Pos {
			p.Events++
			p.Blocks += added
			p.operator = p.operator || why != ""
			return
		}
	}
	ws.runs = append(ws.runs, Provenance{Actor: r.Actor, Writer: r.Writer, N: r.Pos, Seq: r.Seq, Time: r.Time,
		Events: 1, Blocks: added, operator: why != ""})
}

// provenance is what Verify reports of the runs: those of operator
// actions, or all of them when no model call was made.
func (ws *writers) provenance(inferences int) []Provenance {
	out := []Provenance{}
	for _, p := range ws.runs {
		if p.operator || inferences == 0 {
			out = append(out, p)
		}
	}
	return out
}

// writerName is how a report names the role that stored a step.
func writerName(w string) string {
	if w == "" {
		return "an unattributed writer (written before roles were recorded)"
	}
	return w
}
