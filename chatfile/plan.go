package chatfile

import (
	"fmt"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// ActorImport is the actor of the events an import records.
const ActorImport = "import"

// ImportPlan is one chat file turned into the events that record it, ready
// to append.
type ImportPlan struct {
	// Path is where the chat came from, for messages.
	Path string
	// Conversation is the chat's id, or "chat-" and 24 hex digits of its
	// content hash when it has none.
	Conversation string
	// Cause is the request ID of the import: "import-" and 32 hex digits
	// of the content hash, so importing the same content again is
	// recognised as done.
	Cause string
	// Events are conversation.started (with the metadata as data) and one
	// event per block, all of step 0 of Cause: one message, stored
	// atomically. They carry the file's created_at (the last one its
	// updated_at), so an export shows the conversation's own times.
	Events []events.Event
}

// PlanImport turns a parsed chat into events and checks that they fold
// into a valid Turn. now is the time used when the file has none.
func PlanImport(path string, c *Chat, now time.Time) (*ImportPlan, error) {
	digest := c.digest()
	conv := c.ID
	if conv == "" {
		conv = "chat-" + digest[:24]
	}
	p := &ImportPlan{Path: path, Conversation: conv, Cause: "import-" + digest[:32]}
	created, updated := c.CreatedAt, c.UpdatedAt
	if created.IsZero() {
		created = now.UTC()
	}
	if updated.IsZero() {
		updated = created
	}
	add := func(pl events.Payload) {
		e := events.New(conv, p.Cause, 0, ActorImport, pl)
		e.Time = created
		p.Events = append(p.Events, e)
	}
	add(events.ConversationStarted{Data: cloneMeta(c.Metadata)})
	n := 0
	for _, b := range c.Blocks() {
		switch b.Kind {
		case events.KindSystem:
			// The file's own prompt: recorded with its source, so the
			// profile's middlewares know they did not write it and keep
			// it as the conversation's prompt (see middlewares.PromptPolicy).
			add(events.SystemPromptSet{BlockID: b.ID, Text: b.Text, Index: n,
				Meta: map[string]string{events.MetaSystemPromptSource: middlewares.SourceImport}})
		case events.KindUser:
			add(events.UserAppended{BlockID: b.ID, Text: b.Text})
		case events.KindReasoning:
			add(events.ReasoningAppended{BlockID: b.ID, Text: b.Text, Meta: b.Meta})
		case events.KindLLMText:
			add(events.LLMTextAppended{BlockID: b.ID, Text: b.Text, Meta: b.Meta})
		case events.KindToolCall:
			add(events.ToolCalled{BlockID: b.ID, CallID: b.CallID, Name: b.ToolName, Arguments: b.Arguments, Meta: b.Meta})
		case events.KindToolResult:
			add(events.ToolResult{BlockID: b.ID, CallID: b.CallID, Text: b.Text})
		}
		n++
	}
	if len(p.Events) > 1 {
		p.Events[len(p.Events)-1].Time = updated
	}
	t := projector.New(conv)
	if err := projector.ApplyAll(t, p.Events); err != nil {
		return nil, fmt.Errorf("%s: the messages do not make a valid conversation: %w", path, err)
	}
	if _, err := events.Encode(p.Events...); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return p, nil
}
