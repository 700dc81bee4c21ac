package engine

import (
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// ErrPromptLocked refuses a change to a locked system prompt, or a system
// block added beside it, in a Tx, whatever actor it names: an operator's
// lock (systemprompt.locked) freezes the prompt against every middleware,
// the built-in ones and a library user's alike (one that names itself
// "operator:<name>" too), until the operator unlocks it with `turnlog
// prompt`, whose changes (the operator package) go through no Tx.
var ErrPromptLocked = errors.New("the system prompt is locked")

// keepsLock checks that p, by actor, leaves the Turn's locked system
// blocks as they are and adds no system block beside them. The fold
// itself takes such a change (a log that holds one still reads); the Tx,
// the way every middleware writes, refuses to write one.
func keepsLock(turn *projector.Turn, actor string, p events.Payload) error {
	var touched []string
	switch p := p.(type) {
	case events.SystemPromptReplaced:
		touched = []string{p.BlockID}
	case events.BlocksRemoved:
		touched = p.BlockIDs
	case events.BlockSplit:
		touched = []string{p.BlockID}
	case events.TurnCompacted:
		touched = p.Removed
	case events.SystemPromptSet:
	default:
		return nil
	}
	for i := range turn.Blocks {
		b := &turn.Blocks[i]
		holder := b.Meta[events.MetaSystemPromptLock]
		if b.Kind != events.KindSystem || holder == "" {
			continue
		}
		if set, ok := p.(events.SystemPromptSet); ok {
			return fmt.Errorf("%w: system block %s is locked by %s, and no system block is added beside it (%s would be); it stays so until `turnlog prompt unlock`",
				ErrPromptLocked, b.ID, holder, set.BlockID)
		}
		for _, id := range touched {
			if id == b.ID {
				return fmt.Errorf("%w: system block %s is locked by %s; no middleware replaces, splits or removes it until `turnlog prompt unlock`",
					ErrPromptLocked, b.ID, holder)
			}
		}
	}
	return nil
}
