package main

import (
	"context"
	"errors"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
)

// actorSysprompt is the actor of the events example.sysprompt records.
const actorSysprompt = "example.sysprompt"

// newSysprompt is example.sysprompt: it keeps the conversation's system
// prompt at the profile's text. Options:
//
//	example.sysprompt:
//	  prompt: You are ...
//
// Like every middleware it changes the Turn only through the Tx, and only
// when there is something to change, so it can run before every model
// call of a conversation without piling up prompts.
func newSysprompt(s profile.MiddlewareSpec) (engine.Middleware, error) {
	var opts struct {
		Prompt string `yaml:"prompt"`
	}
	if err := s.Options.Decode(&opts); err != nil {
		return nil, err
	}
	if opts.Prompt == "" {
		return nil, errors.New("options: prompt is required, e.g. options: {example.sysprompt: {prompt: You are ...}}")
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			sp, _, ok := tx.Turn().SystemPrompt()
			switch {
			case !ok:
				err := tx.Emit(actorSysprompt, events.SystemPromptSet{BlockID: engine.NewID(), Text: opts.Prompt, Trust: events.Trusted,
					Meta: map[string]string{events.MetaSystemPromptSource: actorSysprompt}})
				if err != nil {
					return err
				}
			case sp.Text != opts.Prompt && sp.Meta[events.MetaSystemPromptSource] == actorSysprompt:
				// Our own prompt, from an earlier version of the profile.
				err := tx.Emit(actorSysprompt, events.SystemPromptReplaced{BlockID: sp.ID, Text: opts.Prompt, Previous: sp.Text,
					Reason: "the profile's prompt changed"})
				if err != nil {
					return err
				}
			}
			return next(ctx, tx)
		}
	}, nil
}
