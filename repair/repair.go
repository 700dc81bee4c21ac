// Package repair finds what makes a conversation unusable and fixes it
// with recorded events, for `turnlog repair`: messages on its subject that
// are not its steps (garbage another NATS client published) are removed
// with a message.removed audit event each, and orphaned reasoning blocks
// (which every later request under a profile with the reasoning guard
// refuses) are removed with blocks.removed. Nothing is changed without a
// plan the operator saw, and the log says what was done and by whom.
package repair

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// ActorRepair is the actor of the events a repair records.
const ActorRepair = "repair"

// ErrNoEvents is returned for a conversation with nothing stored.
var ErrNoEvents = errors.New("conversation has no events")

// Plan is what Apply will do to a conversation.
type Plan struct {
	Conversation string `json:"conversation"`
	// Messages are the corrupt messages to remove and how.
	Messages *eventlog.RepairPlan `json:"messages"`
	// Orphans are the orphaned reasoning blocks of the Turn (folded
	// without the corrupt messages), to remove.
	Orphans []middlewares.Orphan `json:"orphans"`
	// Unfoldable says why the Turn could not be folded even without the
	// corrupt messages ("" when it could): Orphans is then unknown, and
	// what is wrong needs a person.
	Unfoldable string `json:"unfoldable,omitempty"`
	// Abandoned are the recording gateway's calls the conversation's last
	// step left open whose gateway no longer runs, to close as failed.
	Abandoned []Abandoned `json:"abandoned"`
}

// Abandoned is a model call a gateway began and never finished (it was
// killed, or lost NATS, between the call's input and its outcome) in a
// conversation no later call came to (a first call: the app's retry
// starts a conversation of its own), so no gateway closes it.
type Abandoned struct {
	InferenceID string `json:"inference_id"`
	// Instance is the gateway that made the call.
	Instance string    `json:"instance"`
	Started  time.Time `json:"started"`
}

// Empty reports whether there is nothing to repair.
func (p *Plan) Empty() bool {
	return p.Messages.Empty() && len(p.Orphans) == 0 && len(p.Abandoned) == 0
}

// Inspect plans the repair of a conversation. It changes nothing.
func Inspect(ctx context.Context, l *eventlog.Log, conversation string) (*Plan, error) {
	msgs, err := l.PlanRepair(ctx, conversation)
	if err != nil {
		return nil, err
	}
	last, err := l.LastSeq(ctx, conversation)
	if err != nil {
		return nil, err
	}
	if last == 0 {
		return nil, fmt.Errorf("repair %s: %w; check the ID", conversation, ErrNoEvents)
	}
	plan := &Plan{Conversation: conversation, Messages: msgs, Orphans: []middlewares.Orphan{}, Abandoned: []Abandoned{}}
	if plan.Abandoned, err = abandoned(ctx, l, conversation); err != nil {
		return nil, err
	}
	turn := projector.New(conversation)
	for rec, err := range l.Events(ctx, conversation) {
		if errors.Is(err, eventlog.ErrCorruptMessage) {
			continue // in the plan already
		}
		if err != nil {
			return nil, fmt.Errorf("repair %s: %w", conversation, err)
		}
		if err := projector.Apply(turn, rec.Event); err != nil {
			plan.Unfoldable = fmt.Sprintf("event %d (message %d): %v", rec.Pos, rec.Seq, err)
			return plan, nil
		}
	}
	plan.Orphans = append(plan.Orphans, middlewares.OrphanedReasoning(turn.Blocks)...)
	return plan, nil
}

// abandoned lists the gateway calls conv's last step left open whose
// gateway does not answer (eventlog.Log.Alive): the step a stopped call
// left is the last one until the next call comes. One whose gateway runs
// is in progress there.
func abandoned(ctx context.Context, l *eventlog.Log, conv string) ([]Abandoned, error) {
	out := []Abandoned{}
	tail, err := l.Last(ctx, conv)
	if errors.Is(err, eventlog.ErrCorruptMessage) || errors.Is(err, eventlog.ErrForeignMessage) {
		// The last message is not a step: removed first (the plan's
		// Messages); a call left open before it shows on the next run.
		return out, nil
	}
	if err != nil || tail.Seq == 0 {
		return out, err
	}
	for _, e := range events.OpenCalls(tail.Events) {
		instance := e.Payload.(events.InferenceStarted).Gateway["instance"]
		if instance == "" {
			continue // not a gateway's live call (an import's, a worker's)
		}
		alive, err := l.Alive(ctx, instance)
		if err != nil {
			return nil, fmt.Errorf("repair %s: ask whether gateway %s runs: %w", conv, instance, err)
		}
		if !alive {
			out = append(out, Abandoned{InferenceID: e.Payload.(events.InferenceStarted).InferenceID, Instance: instance, Started: e.Time})
		}
	}
	return out, nil
}

// Result is what Apply did.
type Result struct {
	Conversation string `json:"conversation"`
	// Cause is the ID the repair's events carry.
	Cause string `json:"cause"`
	// RemovedMessages and RemovedBlocks count what went.
	RemovedMessages int `json:"removed_messages"`
	RemovedBlocks   int `json:"removed_blocks"`
	// ClosedCalls counts the abandoned calls closed as failed.
	ClosedCalls int `json:"closed_calls"`
}

// Apply carries out plan (from Inspect, just before) under a fresh cause:
// the corrupt messages first (see eventlog.RemoveCorrupt), then the
// orphaned reasoning blocks the plan listed that are still orphaned, one
// blocks.removed each, last first, and the abandoned calls still open, an
// inference.failed each, in one step. If the conversation
// changed since the plan, it stops with an error matching
// eventlog.ErrConflict: inspect again.
func Apply(ctx context.Context, l *eventlog.Log, plan *Plan) (*Result, error) {
	conv := plan.Conversation
	res := &Result{Conversation: conv, Cause: ulid.Make().String()}
	step := 0
	if !plan.Messages.Empty() {
		if err := l.RemoveCorrupt(ctx, plan.Messages, res.Cause, ActorRepair); err != nil {
			return res, err
		}
		res.RemovedMessages = len(plan.Messages.Corrupt)
		if res.RemovedMessages > 0 {
			step = 1 // the audit step
		}
	}
	if len(plan.Orphans) == 0 && len(plan.Abandoned) == 0 {
		return res, nil
	}
	turn, err := l.Load(ctx, conv)
	if err != nil {
		return res, fmt.Errorf("repair %s: %w", conv, err)
	}
	listed := map[string]bool{}
	for _, o := range plan.Orphans {
		listed[o.ID] = true
	}
	orphans := slices.DeleteFunc(middlewares.OrphanedReasoning(turn.Blocks), func(o middlewares.Orphan) bool { return !listed[o.ID] })
	tx := engine.NewTx(turn, res.Cause, engine.WithLog(l), engine.WithStep(step))
	for j := len(orphans) - 1; j >= 0; j-- { // last first: earlier indices stay as the reasons say
		o := orphans[j]
		if err := tx.Emit(ActorRepair, events.BlocksRemoved{BlockIDs: []string{o.ID}, Reason: o.Reason() + ", removed by turnlog repair"}); err != nil {
			return res, fmt.Errorf("repair %s: %w", conv, err)
		}
	}
	still := map[string]bool{} // abandoned still: not closed since the plan
	if len(plan.Abandoned) > 0 {
		now, err := abandoned(ctx, l, conv)
		if err != nil {
			return res, err
		}
		for _, a := range now {
			still[a.InferenceID] = true
		}
	}
	closed := 0
	for _, a := range plan.Abandoned {
		if !still[a.InferenceID] {
			continue
		}
		why := fmt.Sprintf("no outcome was recorded: the gateway that made the call (instance %s) stopped before it recorded the answer; closed by turnlog repair", a.Instance)
		if err := tx.Emit(ActorRepair, events.InferenceFailed{InferenceID: a.InferenceID, Error: why, Transient: true, Duration: time.Since(a.Started).Round(time.Millisecond)}); err != nil {
			return res, fmt.Errorf("repair %s: %w", conv, err)
		}
		closed++
	}
	if len(orphans) == 0 && closed == 0 {
		return res, nil
	}
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("repair %s: %w", conv, err)
	}
	res.RemovedBlocks, res.ClosedCalls = len(orphans), closed
	return res, nil
}
