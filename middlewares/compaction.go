package middlewares

import (
	"context"
	"errors"
	"fmt"
	"unicode/utf8"

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
	// MaxSummaryBytes is the most a stored summary may hold (default
	// DefaultMaxSummaryBytes): a longer one, whatever the model returned,
	// is cut there. The summary travels in one step with the rest of the
	// compaction, and a step the server cannot store would fail every
	// later request of the conversation.
	MaxSummaryBytes int
	// MaxInputBytes bounds the transcript one compaction asks the model
	// to summarize (default DefaultMaxSummaryInputBytes), and MaxInputBlocks
	// the blocks it removes (default DefaultMaxSummaryInputBlocks): the
	// oldest blocks that fit are compacted, the rest on later requests.
	// A transcript past the model's context window fails the call, and
	// the IDs of the removed blocks are stored in the compaction's step.
	MaxInputBytes  int
	MaxInputBlocks int
}

// Defaults of CompactionConfig's bounds.
const (
	// DefaultMaxSummaryBytes is the default cap of a stored summary:
	// a few pages of text, far more than the few paragraphs the
	// instruction asks for.
	DefaultMaxSummaryBytes = 16 << 10
	// DefaultMaxSummaryInputBytes is the default cap of one compaction's
	// transcript: about 128k tokens, what current models accept.
	DefaultMaxSummaryInputBytes = 512 << 10
	// DefaultMaxSummaryInputBlocks is the default cap of the blocks one
	// compaction removes: their IDs take about 60 KB of its step.
	DefaultMaxSummaryInputBlocks = 1000
)

func (c *CompactionConfig) setDefaults() {
	if c.KeepLast == 0 {
		c.KeepLast = 8
	}
	if c.MaxSummaryBytes == 0 {
		c.MaxSummaryBytes = DefaultMaxSummaryBytes
	}
	if c.MaxInputBytes == 0 {
		c.MaxInputBytes = DefaultMaxSummaryInputBytes
	}
	if c.MaxInputBlocks == 0 {
		c.MaxInputBlocks = DefaultMaxSummaryInputBlocks
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
	case c.MaxSummaryBytes < 64 || c.MaxInputBytes < 0 || c.MaxInputBlocks < 0:
		return fmt.Errorf("compaction: MaxSummaryBytes %d, MaxInputBytes %d, MaxInputBlocks %d: the summary needs at least 64 bytes and no bound may be negative",
			c.MaxSummaryBytes, c.MaxInputBytes, c.MaxInputBlocks)
	case c.MaxInputBlocks == 1:
		return errors.New("compaction: MaxInputBlocks is 1; a compaction replaces at least 2 blocks with its summary")
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
// One compaction removes at most MaxInputBlocks blocks whose transcript
// (see Transcript) fits in MaxInputBytes, the oldest first and at least
// one whole unit: a Turn still over budget is compacted again on its next
// request. The summary is cut at MaxSummaryBytes whatever the Summarizer
// returns, so the step that stores it always fits in a message.
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
	removed := oldest(blocks, max(cut, 0), cfg)
	if len(removed) < 2 {
		return nil
	}
	text, err := cfg.Summarizer.Summarize(ctx, tx, removed)
	if err != nil {
		return fmt.Errorf("%s: summarize %d blocks: %w", ActorCompaction, len(removed), err)
	}
	cutNote := ""
	if len(text) > cfg.MaxSummaryBytes {
		cutNote = fmt.Sprintf("; the summary was cut from %d to at most %d bytes", len(text), cfg.MaxSummaryBytes)
		text = truncateUTF8(text, cfg.MaxSummaryBytes)
	}
	ids := make([]string, len(removed))
	for i, b := range removed {
		ids[i] = b.ID
	}
	reason := fmt.Sprintf("%d blocks, ~%d tokens: over the budget of %s; summarized the %d oldest conversation blocks%s",
		len(blocks), estimateTokens(blocks), budget(cfg), len(removed), cutNote)
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

// oldest returns the compactable blocks of the units before cut (a unit
// boundary), oldest first, as many whole units as fit under the config's
// input bounds, and at least one unit.
func oldest(blocks []events.Block, cut int, cfg CompactionConfig) []events.Block {
	var removed []events.Block
	size := 0
	for _, u := range units(blocks[:cut]) {
		n, add := 0, 0
		for _, b := range blocks[u.Start:u.End] {
			if compactable(b) {
				n++
				add += transcriptBytes(b)
			}
		}
		if len(removed) >= 2 && (size+add > cfg.MaxInputBytes || len(removed)+n > cfg.MaxInputBlocks) {
			break
		}
		for _, b := range blocks[u.Start:u.End] {
			if compactable(b) {
				removed = append(removed, b)
			}
		}
		size += add
	}
	return removed
}

// transcriptBytes is about what b adds to a Transcript.
func transcriptBytes(b events.Block) int {
	if b.Kind == events.KindReasoning {
		return 0
	}
	return len(b.Text) + len(b.ToolName) + len(b.Arguments) + 20
}

// truncateUTF8 cuts s to at most n bytes, on a character boundary, ending
// with "…" when anything was cut.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	end := n - len(ellipsis)
	for end > 0 && !utf8.RuneStart(s[end]) {
		end--
	}
	return s[:end] + ellipsis
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
