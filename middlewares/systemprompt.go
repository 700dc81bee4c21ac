package middlewares

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Actors of the system prompt middlewares' events.
const (
	ActorSystemPromptReplace = "systemprompt.replace"
	ActorSystemPromptAppend  = "systemprompt.append"
)

// MetaSystemPromptAppendPrefix starts the metadata key under which
// SystemPromptAppend records the hash of the text it appended, one key per
// tag: "systemprompt.append.<tag>".
const MetaSystemPromptAppendPrefix = "systemprompt.append."

// PromptFunc computes a prompt for the model call about to be made, for
// example by rendering a template with the request's data. An empty result
// means "no prompt this time": the middleware then changes nothing.
type PromptFunc func(ctx context.Context, tx *engine.Tx) (string, error)

// StaticPrompt is the PromptFunc of a fixed text.
func StaticPrompt(text string) PromptFunc {
	return func(context.Context, *engine.Tx) (string, error) { return text, nil }
}

// SystemPromptReplaceConfig configures SystemPromptReplace.
type SystemPromptReplaceConfig struct {
	// Prompt gives the system prompt (required; StaticPrompt for a fixed
	// text).
	Prompt PromptFunc
	// Source is recorded in the block's systemprompt.source metadata, so
	// replay can tell which middleware or template wrote the prompt
	// (default "systemprompt.replace"). A prompt block with another source
	// was written by someone else: Policy decides.
	Source string
	// Policy is what happens to a conversation prompt this middleware did
	// not write (imported, forked, set by an operator or another
	// profile): PolicyKeep (the default) leaves it as the conversation's
	// prompt, PolicyReplace replaces its text with Prompt, in place.
	Policy PromptPolicy
}

func (c *SystemPromptReplaceConfig) setDefaults() {
	if c.Source == "" {
		c.Source = ActorSystemPromptReplace
	}
}

// Validate reports the first setting that cannot work.
func (c SystemPromptReplaceConfig) Validate() error {
	if c.Prompt == nil {
		return errors.New("systemprompt.replace: Prompt is nil; set it, e.g. to middlewares.StaticPrompt(text)")
	}
	if err := c.Policy.Validate(); err != nil {
		return fmt.Errorf("systemprompt.replace: %w", err)
	}
	return nil
}

// SystemPromptReplace keeps the configured prompt as the conversation's
// system prompt, idempotently: it inserts it when the conversation has
// none and replaces its own earlier text when the prompt changed, never
// adding a second prompt. Use it when the operator owns the system prompt
// (a product persona); use SystemPromptAppend when the conversation's own
// system prompt must be kept and yours only added to it.
//
// It looks at the first system block that GlobalPrompt does not own:
//   - none: it inserts a trusted system block at the front
//     (systemprompt.set) with systemprompt.source metadata;
//   - one with systemprompt.lock metadata: it leaves it alone;
//   - one whose text already is the prompt and whose source is Source: it
//     emits nothing;
//   - one whose source is Source, with another text: it emits
//     systemprompt.replaced with the old text as Previous and the prompt
//     as Text;
//   - one with another source (an import, a fork, an operator, another
//     profile): under PolicyKeep, the default, it is the conversation's
//     prompt and is left alone; under PolicyReplace it is replaced as
//     above, the event recording its source as PreviousSource and Source
//     as the new one.
//
// So it is idempotent: run again on its own result, it emits no event.
//
// Do not put role markers ("User:", ...) in a prompt that Roles will split:
// the split changes the block's text, and this middleware would then
// restore the full prompt on every call.
func SystemPromptReplace(cfg SystemPromptReplaceConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := replaceSystemPrompt(ctx, tx, cfg); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

func replaceSystemPrompt(ctx context.Context, tx *engine.Tx, cfg SystemPromptReplaceConfig) error {
	sp, _, ok := systemPromptBlock(tx.Turn())
	if ok && sp.Meta[events.MetaSystemPromptLock] != "" {
		return nil
	}
	prompt, err := cfg.Prompt(ctx, tx)
	if err != nil {
		return fmt.Errorf("%s: compute prompt: %w", ActorSystemPromptReplace, err)
	}
	if prompt == "" {
		return nil
	}
	if !ok {
		return tx.Emit(ActorSystemPromptReplace, events.SystemPromptSet{
			BlockID: engine.NewID(),
			Text:    prompt,
			Index:   0,
			Trust:   events.Trusted,
			Meta:    map[string]string{events.MetaSystemPromptSource: cfg.Source},
		})
	}
	source := sp.Meta[events.MetaSystemPromptSource]
	if source == cfg.Source {
		if sp.Text == prompt {
			return nil
		}
		return tx.Emit(ActorSystemPromptReplace, events.SystemPromptReplaced{
			BlockID:        sp.ID,
			Text:           prompt,
			Previous:       sp.Text,
			Meta:           map[string]string{events.MetaSystemPromptSource: cfg.Source},
			Reason:         "system prompt set to the configured prompt from " + cfg.Source,
			PreviousSource: source,
		})
	}
	if cfg.Policy != PolicyReplace {
		return nil // the conversation's own prompt: kept
	}
	return tx.Emit(ActorSystemPromptReplace, events.SystemPromptReplaced{
		BlockID:        sp.ID,
		Text:           prompt,
		Previous:       sp.Text,
		Meta:           TakeOverMeta(sp.Meta, cfg.Source, nil),
		Reason:         "prompt policy replace: the prompt from " + cfg.Source + " replaces the conversation's",
		PreviousSource: source,
	})
}

// SystemPromptAppendConfig configures SystemPromptAppend.
type SystemPromptAppendConfig struct {
	// Prompt gives the text to append (required).
	Prompt PromptFunc
	// Tag names this append, so that several appends (say "tools" and
	// "safety") each happen once (default "default").
	Tag string
}

func (c *SystemPromptAppendConfig) setDefaults() {
	if c.Tag == "" {
		c.Tag = "default"
	}
}

// Validate reports the first setting that cannot work.
func (c SystemPromptAppendConfig) Validate() error {
	if c.Prompt == nil {
		return errors.New("systemprompt.append: Prompt is nil; set it, e.g. to middlewares.StaticPrompt(text)")
	}
	if strings.ContainsAny(c.Tag, " \t\n") {
		return fmt.Errorf("systemprompt.append: Tag %q contains white space; use a short word such as \"tools\"", c.Tag)
	}
	return nil
}

// SystemPromptAppend adds the configured text to the end of the active
// system prompt, separated by a blank line, or inserts it as a new trusted
// system block at the front (systemprompt.set) when the Turn has none. Use
// it when a conversation's own system prompt must survive and yours is an
// addition to it (tool instructions, a house style); use
// SystemPromptReplace when yours must win.
//
// The block records the hash of what was appended under the metadata key
// "systemprompt.append.<Tag>", which makes the middleware idempotent: with
// the same text it emits nothing. When the text changed and the previously
// appended text is still the block's tail, that tail is swapped for the new
// text (systemprompt.replaced) instead of appending a second copy; if the
// tail was edited since, the new text is appended after it. A block
// carrying systemprompt.lock metadata is left alone, and so are the blocks
// GlobalPrompt owns.
func SystemPromptAppend(cfg SystemPromptAppendConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	key := MetaSystemPromptAppendPrefix + cfg.Tag
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := appendSystemPrompt(ctx, tx, cfg, key); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

func appendSystemPrompt(ctx context.Context, tx *engine.Tx, cfg SystemPromptAppendConfig, key string) error {
	sp, _, ok := systemPromptBlock(tx.Turn())
	if ok && sp.Meta[events.MetaSystemPromptLock] != "" {
		return nil
	}
	prompt, err := cfg.Prompt(ctx, tx)
	if err != nil {
		return fmt.Errorf("%s: compute prompt: %w", ActorSystemPromptAppend, err)
	}
	if prompt == "" {
		return nil
	}
	hash := projector.HashText(prompt)
	if !ok {
		return tx.Emit(ActorSystemPromptAppend, events.SystemPromptSet{
			BlockID: engine.NewID(),
			Text:    prompt,
			Index:   0,
			Trust:   events.Trusted,
			Meta:    map[string]string{events.MetaSystemPromptSource: ActorSystemPromptAppend, key: hash},
		})
	}
	old := sp.Meta[key]
	if old == hash {
		return nil
	}
	text := sp.Text + "\n\n" + prompt
	kept := len(sp.Text)
	reason := "appended the " + cfg.Tag + " prompt"
	if old != "" {
		if head, found := cutAppended(sp.Text, old); found {
			text = head + prompt
			kept = len(head)
			reason = "the " + cfg.Tag + " prompt changed; swapped the appended text"
		}
	}
	return tx.Emit(ActorSystemPromptAppend, events.SystemPromptReplaced{
		BlockID:   sp.ID,
		Text:      text,
		Previous:  sp.Text,
		Meta:      map[string]string{key: hash},
		Reason:    reason,
		Untrusted: spansBefore(sp.Untrusted, kept),
	})
}

// spansBefore returns the untrusted spans of the first n bytes of a text:
// the part of a prompt an append keeps as it was, whose variable content
// must stay marked (a replacement without spans would make it the
// operator's own words).
func spansBefore(spans []events.Span, n int) []events.Span {
	var out []events.Span
	for _, s := range spans {
		if s.Start >= n {
			break
		}
		s.End = min(s.End, n)
		out = append(out, s)
	}
	return out
}

// cutAppended finds the text a previous append left at the end of s, by its
// hash, and returns what precedes it (including the separator). The whole
// of s counts too: that is a prompt the middleware inserted as a new block.
func cutAppended(s, hash string) (head string, found bool) {
	if projector.HashText(s) == hash {
		return "", true
	}
	for i := strings.Index(s, "\n\n"); i >= 0; {
		if projector.HashText(s[i+2:]) == hash {
			return s[:i+2], true
		}
		j := strings.Index(s[i+1:], "\n\n")
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return "", false
}

// systemPromptBlock returns the system prompt the prompt middlewares manage:
// the first system block that GlobalPrompt does not own. Skipping global
// prompt blocks keeps the two from fighting over one block, whichever runs
// first.
func systemPromptBlock(t *projector.Turn) (events.Block, int, bool) {
	for i := range t.Blocks {
		if b := &t.Blocks[i]; b.Kind == events.KindSystem && b.Meta[MetaGlobalPromptID] == "" {
			return *b, i, true
		}
	}
	return events.Block{}, -1, false
}
