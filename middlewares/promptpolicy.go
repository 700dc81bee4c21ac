package middlewares

import (
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// PromptPolicy says what a prompt middleware (SystemPromptReplace,
// TemplatePrompt) does with a conversation prompt it did not write: one
// that came with an import, a fork, an operator's `turnlog prompt set`,
// or another profile. Whatever the policy, a conversation never ends up
// with two prompts: the middleware either leaves that prompt alone or
// takes it over in place.
type PromptPolicy string

// Prompt policies. The zero value is PolicyKeep.
const (
	// PolicyKeep (the default) makes a prompt the middleware did not write
	// the conversation's prompt, kept exactly as it is: no second prompt
	// is inserted in front of it and it is not rewritten. The profile's
	// own prompt applies to conversations that have none.
	PolicyKeep PromptPolicy = "keep"
	// PolicyReplace makes the middleware's prompt win: the other prompt's
	// text is replaced in place (systemprompt.replaced: the block keeps
	// its ID and position, the event records the old text and source and
	// the new source), once; from then on the block is the middleware's.
	PolicyReplace PromptPolicy = "replace"
)

// Validate reports a policy that is neither keep nor replace.
func (p PromptPolicy) Validate() error {
	switch p {
	case "", PolicyKeep, PolicyReplace:
		return nil
	}
	return fmt.Errorf("prompt policy %q: use %q (the default) or %q", string(p), PolicyKeep, PolicyReplace)
}

// Sources of system prompts that no middleware writes: they are recorded
// in the systemprompt.source metadata by whoever did write the block.
const (
	// SourceImport is the source of the system blocks `turnlog import`
	// records from a chat file's system and developer messages.
	SourceImport = "import"
	// SourceOperator is the source of a prompt an operator set on one
	// conversation (`turnlog prompt set`, PUT /conversations/{id}/prompt).
	SourceOperator = "operator"
)

// locked reports whether b carries a lock (see events.MetaSystemPromptLock).
func locked(b events.Block) bool { return b.Meta[events.MetaSystemPromptLock] != "" }

// promptFrozen reports whether the conversation's prompt (the block
// systemPromptBlock finds) is locked. A lock freezes the conversation's
// system instructions: no middleware replaces, appends to, rebuilds or
// splits that block, nor inserts a system block (a prompt of its own, the
// global prompt) while it holds.
func promptFrozen(t *projector.Turn) bool {
	b, _, ok := systemPromptBlock(t)
	return ok && locked(b)
}

// TakeOverMeta is the metadata change (for systemprompt.replaced) that
// makes a system block someone else wrote the block of source: the new
// source, and what other writers recorded about the old text removed (the
// template's hash, SystemPromptAppend's records; an empty value deletes a
// key), since that text is gone. set adds keys of the new writer's own.
func TakeOverMeta(old map[string]string, source string, set map[string]string) map[string]string {
	meta := map[string]string{events.MetaSystemPromptSource: source}
	for k := range old {
		if k == MetaTemplateHash || strings.HasPrefix(k, MetaSystemPromptAppendPrefix) {
			meta[k] = ""
		}
	}
	for k, v := range set {
		meta[k] = v
	}
	return meta
}

// ConversationPrompt returns the conversation's system prompt as the
// prompt middlewares and operators manage it: the first system block that
// is not a global prompt's (GlobalPrompt's blocks are tagged and managed
// apart). ok is false when the conversation has none.
func ConversationPrompt(t *projector.Turn) (b events.Block, index int, ok bool) {
	return systemPromptBlock(t)
}
