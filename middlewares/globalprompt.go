package middlewares

import (
	"context"
	"errors"
	"fmt"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// ActorGlobalPrompt is the actor of GlobalPrompt's events.
const ActorGlobalPrompt = "globalprompt"

// MetaGlobalPromptID marks the system block a GlobalPrompt owns, with the
// prompt's ID as value.
const MetaGlobalPromptID = "globalprompt.id"

// GlobalPromptConfig configures GlobalPrompt.
type GlobalPromptConfig struct {
	// Prompt gives the operator prompt (required).
	Prompt PromptFunc
	// ID identifies this global prompt among others (default "global").
	ID string
}

func (c *GlobalPromptConfig) setDefaults() {
	if c.ID == "" {
		c.ID = "global"
	}
}

// Validate reports the first setting that cannot work.
func (c GlobalPromptConfig) Validate() error {
	if c.Prompt == nil {
		return errors.New("globalprompt: Prompt is nil; set it, e.g. to middlewares.StaticPrompt(text)")
	}
	return nil
}

// GlobalPrompt keeps an operator prompt (policies, legal notices, facts
// every conversation of a deployment must see) in every Turn as its own
// trusted system block, next to the conversation's system prompt rather
// than inside it. Use it when that text must not depend on, nor be lost
// with, the per-conversation prompt that SystemPromptReplace or a template
// manages.
//
// The block is found by its globalprompt.id metadata. When there is none,
// it is inserted right after the first system block, or at the front when
// the Turn has no system block (systemprompt.set, section "system"). When
// it exists with another text, its text is replaced (systemprompt.replaced).
// When it exists with the same text, or carries systemprompt.lock, nothing
// is emitted. Nor is anything while the conversation's prompt is locked
// (an operator froze the conversation's system instructions: `turnlog
// prompt lock`): the global prompt is neither added nor changed then.
func GlobalPrompt(cfg GlobalPromptConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := globalPrompt(ctx, tx, cfg); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

func globalPrompt(ctx context.Context, tx *engine.Tx, cfg GlobalPromptConfig) error {
	turn := tx.Turn()
	cur, found := globalBlock(turn, cfg.ID)
	if found && locked(cur) || promptFrozen(turn) {
		return nil
	}
	prompt, err := cfg.Prompt(ctx, tx)
	if err != nil {
		return fmt.Errorf("%s: compute prompt %s: %w", ActorGlobalPrompt, cfg.ID, err)
	}
	if prompt == "" {
		return nil
	}
	if found {
		if cur.Text == prompt {
			return nil
		}
		return tx.Emit(ActorGlobalPrompt, events.SystemPromptReplaced{
			BlockID:  cur.ID,
			Text:     prompt,
			Previous: cur.Text,
			Reason:   "global prompt " + cfg.ID + " changed",
		})
	}
	at := 0
	if _, i, ok := turn.SystemPrompt(); ok {
		at = i + 1
	}
	return tx.Emit(ActorGlobalPrompt, events.SystemPromptSet{
		BlockID: engine.NewID(),
		Text:    prompt,
		Index:   at,
		Trust:   events.Trusted,
		Meta: map[string]string{
			MetaGlobalPromptID:            cfg.ID,
			events.MetaSection:            SectionSystem,
			events.MetaSystemPromptSource: ActorGlobalPrompt,
		},
	})
}

func globalBlock(t *projector.Turn, id string) (events.Block, bool) {
	for i := range t.Blocks {
		if b := &t.Blocks[i]; b.Kind == events.KindSystem && b.Meta[MetaGlobalPromptID] == id {
			return *b, true
		}
	}
	return events.Block{}, false
}
