package middlewares

import (
	"context"
	"errors"
	"fmt"

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
			if err := guardReasoning(tx, cfg.Repair); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

// guardReasoning runs over every block before every model call: the loop
// that finds no orphan in a valid Turn only compares kinds, and what
// happens with an orphan is out of line.
func guardReasoning(tx *engine.Tx, repair bool) error {
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
		return orphanedReasoning(tx, repair, i)
	}
	return nil
}

// orphanedReasoning fails the step over the orphan at index first or, with
// repair, removes it and every later orphan.
func orphanedReasoning(tx *engine.Tx, repair bool, first int) error {
	type orphan struct {
		id       string
		index    int
		follower string
	}
	var orphans []orphan
	blocks := tx.Turn().Blocks
	for i := first; i < len(blocks); i++ {
		b := &blocks[i]
		if b.Kind != events.KindReasoning {
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
		if !repair {
			return fmt.Errorf("%s: block %s at index %d is followed by %s, which the model API rejects: %w; "+
				"enable ReasoningGuardConfig.Repair to drop such blocks", ActorReasoningGuard, b.ID, i, follower, ErrOrphanReasoning)
		}
		orphans = append(orphans, orphan{b.ID, i, follower})
	}
	// Last first: removing a later block leaves the earlier indices, which
	// the reasons name, as they were. Removing an orphan cannot orphan
	// another block: a reasoning block before it was already an orphan.
	for j := len(orphans) - 1; j >= 0; j-- {
		o := orphans[j]
		if err := tx.Emit(ActorReasoningGuard, events.BlocksRemoved{
			BlockIDs: []string{o.id},
			Reason:   fmt.Sprintf("reasoning block without follower at index %d (followed by %s)", o.index, o.follower),
		}); err != nil {
			return err
		}
	}
	return nil
}
