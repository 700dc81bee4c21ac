package middlewares

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// ActorReasoningGuard is the actor of ReasoningGuard's events.
const ActorReasoningGuard = "reasoningguard"

// ErrOrphanReasoning is wrapped by the error ReasoningGuard fails a step
// with: a reasoning block that is not immediately followed by model text or
// a tool call.
var ErrOrphanReasoning = errors.New("reasoning block without its follower")

// ReasoningGuardConfig configures ReasoningGuard.
type ReasoningGuardConfig struct {
	// Repair removes orphaned reasoning blocks (blocks.removed, with the
	// reason) instead of failing the step.
	Repair bool
	// Remedy, without Repair, is added to the error as a second way out
	// (the first is `turnlog repair`): how the operator turns Repair on
	// where the guard is configured, in their own terms (a profile's
	// middleware name, say).
	Remedy string
}

// Validate reports the first setting that cannot work; every setting of
// ReasoningGuardConfig can.
func (c ReasoningGuardConfig) Validate() error { return nil }

// ReasoningGuard checks, right before every model call, that each reasoning
// block is immediately followed by llm_text or a tool_call. Providers with
// stateless reasoning (the OpenAI Responses API) reject an input where a
// reasoning item is not followed by the output it produced, and such a
// Turn arises easily: a model that stopped after reasoning, a request that
// failed mid-output, an import, a bad reorder. Use it with every reasoning
// model; place it innermost, after the middlewares that move or remove
// blocks, so it checks what the model will receive.
//
// Without Repair it fails the step with an error that wraps
// ErrOrphanReasoning and names the block's ID and index, and emits nothing.
// With Repair it emits one blocks.removed per orphan, last first, each with
// the reason "reasoning block without follower at index N (followed by
// K)", so replay shows what was dropped and why. A valid Turn gets no
// event.
func ReasoningGuard(cfg ReasoningGuardConfig) (engine.Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := guardReasoning(tx, cfg); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

// guardReasoning runs over every block before every model call: the loop
// that finds no orphan in a valid Turn only compares kinds, and what
// happens with an orphan is out of line.
func guardReasoning(tx *engine.Tx, cfg ReasoningGuardConfig) error {
	blocks := tx.Turn().Blocks
	for i := range blocks {
		if blocks[i].Kind != events.KindReasoning {
			continue
		}
		if i+1 < len(blocks) {
			if k := blocks[i+1].Kind; k == events.KindLLMText || k == events.KindToolCall {
				continue
			}
		}
		return orphanedReasoning(tx, cfg)
	}
	return nil
}

// Orphan is a reasoning block that is not immediately followed by model
// text or a tool call: where it is and what follows it.
type Orphan struct {
	ID    string `json:"id"`
	Index int    `json:"index"`
	// Follower says what comes next: "nothing" or "a <kind> block".
	Follower string `json:"follower"`
}

// Reason is the reason a blocks.removed of the orphan records.
func (o Orphan) Reason() string {
	return fmt.Sprintf("reasoning block without follower at index %d (followed by %s)", o.Index, o.Follower)
}

// OrphanedReasoning lists the orphaned reasoning blocks of blocks, in
// order: what ReasoningGuard refuses, or removes in repair mode, and what
// `turnlog repair` offers to remove.
func OrphanedReasoning(blocks []events.Block) []Orphan {
	var out []Orphan
	for i := range blocks {
		if blocks[i].Kind != events.KindReasoning {
			continue
		}
		follower := "nothing"
		if i+1 < len(blocks) {
			k := blocks[i+1].Kind
			if k == events.KindLLMText || k == events.KindToolCall {
				continue
			}
			follower = "a " + string(k) + " block"
		}
		out = append(out, Orphan{ID: blocks[i].ID, Index: i, Follower: follower})
	}
	return out
}

// orphanedReasoning fails the step over the first orphan or, with repair,
// removes every orphan.
func orphanedReasoning(tx *engine.Tx, cfg ReasoningGuardConfig) error {
	orphans := OrphanedReasoning(tx.Turn().Blocks)
	if !cfg.Repair {
		o := orphans[0]
		remedy := fmt.Sprintf("remove it once with `turnlog repair --yes %s`", events.CommandArg(tx.Turn().Conversation))
		if movers := blockMovers(tx); movers != "" {
			// Repair sees only the log, which holds nothing of this
			// step once it fails: the middleware is what to fix.
			remedy = movers + " changed the order of the blocks in this step (moved, removed, inserted or split them), before this guard: if that left it so, fix that middleware " +
				"(it must keep a reasoning block with its follower: middlewares.MoveUnit, middlewares.Units); else " + remedy
		}
		if cfg.Remedy != "" {
			remedy += ", or " + cfg.Remedy
		}
		return fmt.Errorf("%s: block %s at index %d is followed by %s, which the model API rejects: %w; %s",
			ActorReasoningGuard, o.ID, o.Index, o.Follower, ErrOrphanReasoning, remedy)
	}
	// Last first: removing a later block leaves the earlier indices, which
	// the reasons name, as they were. Removing an orphan cannot orphan
	// another block: a reasoning block before it was already an orphan.
	for j := len(orphans) - 1; j >= 0; j-- {
		o := orphans[j]
		if err := tx.Emit(ActorReasoningGuard, events.BlocksRemoved{BlockIDs: []string{o.ID}, Reason: o.Reason()}); err != nil {
			return err
		}
	}
	return nil
}

// blockMovers names the events of the step in hand (tx's pending ones)
// that moved or removed blocks, e.g. `blocks.reordered of "acme.compact"`,
// each once, "" when none: what can have orphaned a reasoning block in
// this step, which the log, and so `turnlog repair`, never sees when the
// step fails.
func blockMovers(tx *engine.Tx) string {
	var names []string
	for _, e := range tx.Pending() {
		switch e.Payload.(type) {
		case events.BlocksReordered, events.BlocksRemoved, events.TurnCompacted, events.BlockInserted, events.BlockSplit:
			if name := string(e.Type) + " of " + strconv.Quote(e.Actor); !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	return strings.Join(names, ", ")
}
