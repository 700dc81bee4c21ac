package middlewares

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// ActorCompaction is the actor of Compaction's events.
const ActorCompaction = "compaction"

// MetaCompactionSummary marks the summary block a compaction inserted.
const MetaCompactionSummary = "compaction.summary"

// PurposeCompaction is the purpose (engine.WithPurpose) of the model calls
// that write summaries.
const PurposeCompaction = "compaction"

// Summarizer writes the summary that replaces compacted blocks. Blocks are
// in Turn order; the text returned becomes the summary block's text. tx is
// the conversation's: a summarizer that asks a model records the call in
// it (engine.InferAside), since every model call is in the log.
type Summarizer interface {
	Summarize(ctx context.Context, tx *engine.Tx, blocks []events.Block) (string, error)
}

// SummarizerFunc adapts a function to Summarizer.
type SummarizerFunc func(ctx context.Context, tx *engine.Tx, blocks []events.Block) (string, error)

// Summarize implements Summarizer.
func (f SummarizerFunc) Summarize(ctx context.Context, tx *engine.Tx, blocks []events.Block) (string, error) {
	return f(ctx, tx, blocks)
}

// CompactionConfig configures Compaction. At least one of MaxBlocks and
// MaxTokens must be set; the Turn is compacted when it exceeds either.
type CompactionConfig struct {
	// MaxBlocks is the most blocks a Turn may have (0: no block limit).
	MaxBlocks int
	// MaxTokens is the most tokens a Turn may have, estimated as
	// len(text)/4 over the text and tool arguments of every block
	// (0: no token limit).
	MaxTokens int
	// KeepLast is how many blocks at the end are never compacted
	// (default 8). The last user block and what follows it are kept too,
	// whatever KeepLast says: the model must see the message it answers.
	KeepLast int
	// Summarizer writes the summary (required): EngineSummarizer in
	// production, FirstWords in tests.
	Summarizer Summarizer
}

func (c *CompactionConfig) setDefaults() {
	if c.KeepLast == 0 {
		c.KeepLast = 8
	}
}

// Validate reports the first setting that cannot work.
func (c CompactionConfig) Validate() error {
	switch {
	case c.MaxBlocks < 0 || c.MaxTokens < 0:
		return fmt.Errorf("compaction: MaxBlocks %d and MaxTokens %d must not be negative", c.MaxBlocks, c.MaxTokens)
	case c.MaxBlocks == 0 && c.MaxTokens == 0:
		return errors.New("compaction: neither MaxBlocks nor MaxTokens is set; set the budget the Turn must stay under")
	case c.KeepLast < 1:
		return fmt.Errorf("compaction: KeepLast is %d; keep at least the last block", c.KeepLast)
	case c.MaxBlocks > 0 && c.KeepLast+1 >= c.MaxBlocks:
		// Otherwise the kept blocks plus the summary are over budget
		// again at once, and every call would summarize the summary.
		return fmt.Errorf("compaction: KeepLast %d leaves no room under MaxBlocks %d for the summary; use a KeepLast below %d",
			c.KeepLast, c.MaxBlocks, c.MaxBlocks-1)
	case c.Summarizer == nil:
		return errors.New("compaction: Summarizer is nil; use middlewares.EngineSummarizer or middlewares.FirstWords")
	}
	return nil
}

// Compaction keeps a long conversation under a budget by replacing its
// oldest part with a summary. Use it when conversations can outgrow the
// model's context window, or when the cost of resending a long history on
// every call matters more than its details.
//
// When the Turn exceeds MaxBlocks or MaxTokens, every conversation block
// (no section, or section "conversation") before the last KeepLast blocks
// and before the last user block is removed and a summary block takes the
// place of the first of them, in one turn.compacted event: Removed lists
// the IDs, Summary is an "other" block with section "conversation" and
// compaction.summary="true". System blocks and context sections are never
// compacted. The cut never separates a reasoning block from its follower
// nor a tool call from its result: it moves back to keep the whole unit
// (see units). Under budget, or with fewer than two blocks to remove, it
// emits nothing.
//
// The summary block is untrusted: it is derived from user, model and tool
// text. A summary can itself be compacted later.
func Compaction(cfg CompactionConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := compact(ctx, tx, cfg); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

func compact(ctx context.Context, tx *engine.Tx, cfg CompactionConfig) error {
	blocks := tx.Turn().Blocks
	// Count tokens only when the block count does not decide already.
	over := cfg.MaxBlocks > 0 && len(blocks) > cfg.MaxBlocks ||
		cfg.MaxTokens > 0 && estimateTokens(blocks) > cfg.MaxTokens
	if !over {
		return nil
	}
	cut := len(blocks) - cfg.KeepLast
	if lastUser := lastIndexOf(blocks, events.KindUser); lastUser >= 0 && lastUser < cut {
		cut = lastUser
	}
	for _, u := range units(blocks) {
		if u.Start < cut && cut < u.End {
			cut = u.Start
			break
		}
	}
	var removed []events.Block
	for _, b := range blocks[:max(cut, 0)] {
		if compactable(b) {
			removed = append(removed, b)
		}
	}
	if len(removed) < 2 {
		return nil
	}
	text, err := cfg.Summarizer.Summarize(ctx, tx, removed)
	if err != nil {
		return fmt.Errorf("%s: summarize %d blocks: %w", ActorCompaction, len(removed), err)
	}
	ids := make([]string, len(removed))
	for i, b := range removed {
		ids[i] = b.ID
	}
	reason := fmt.Sprintf("%d blocks, ~%d tokens: over the budget of %s; summarized the %d oldest conversation blocks",
		len(blocks), estimateTokens(blocks), budget(cfg), len(removed))
	return tx.Emit(ActorCompaction, events.TurnCompacted{
		Removed: ids,
		Summary: &events.Block{
			ID:   engine.NewID(),
			Kind: events.KindOther,
			Text: text,
			Meta: map[string]string{events.MetaSection: SectionConversation, MetaCompactionSummary: "true"},
		},
		Reason: reason,
	})
}

func budget(cfg CompactionConfig) string {
	switch {
	case cfg.MaxBlocks > 0 && cfg.MaxTokens > 0:
		return fmt.Sprintf("%d blocks or %d tokens", cfg.MaxBlocks, cfg.MaxTokens)
	case cfg.MaxBlocks > 0:
		return fmt.Sprintf("%d blocks", cfg.MaxBlocks)
	}
	return fmt.Sprintf("%d tokens", cfg.MaxTokens)
}

// compactable reports whether b is part of the conversation proper: system
// blocks and context sections are the operator's, re-added by their
// middlewares, and are never summarized away.
func compactable(b events.Block) bool {
	if b.Kind == events.KindSystem {
		return false
	}
	s := b.Meta[events.MetaSection]
	return s == "" || s == SectionConversation
}

func lastIndexOf(blocks []events.Block, k events.Kind) int {
	for i := len(blocks) - 1; i >= 0; i-- {
		if blocks[i].Kind == k {
			return i
		}
	}
	return -1
}

// estimateTokens is the budget's token count: a quarter of the bytes of
// text and tool arguments, close enough for English to decide when to
// compact without a tokenizer.
func estimateTokens(blocks []events.Block) int {
	n := 0
	for i := range blocks {
		n += len(blocks[i].Text) + len(blocks[i].Arguments)
	}
	return n / 4
}
