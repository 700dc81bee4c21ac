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
}

// Empty reports whether there is nothing to repair.
func (p *Plan) Empty() bool { return p.Messages.Empty() && len(p.Orphans) == 0 }

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
	plan := &Plan{Conversation: conversation, Messages: msgs, Orphans: []middlewares.Orphan{}}
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

// Result is what Apply did.
type Result struct {
	Conversation string `json:"conversation"`
	// Cause is the ID the repair's events carry.
	Cause string `json:"cause"`
	// RemovedMessages and RemovedBlocks count what went.
	RemovedMessages int `json:"removed_messages"`
	RemovedBlocks   int `json:"removed_blocks"`
}

// Apply carries out plan (from Inspect, just before) under a fresh cause:
// the corrupt messages first (see eventlog.RemoveCorrupt), then the
// orphaned reasoning blocks the plan listed that are still orphaned, one
// blocks.removed each, last first, in one step. If the conversation
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
	if len(plan.Orphans) == 0 {
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
	if err := tx.Commit(ctx); err != nil {
		return res, fmt.Errorf("repair %s: %w", conv, err)
	}
	res.RemovedBlocks = len(orphans)
	return res, nil
}
