package events

import (
	"fmt"
	"strings"
)

// Type names an event in the catalog. Type strings are part of the log's
// format: once released they never change, so that old logs stay readable.
type Type string

// The catalog. Events are facts, named in the past tense.
const (
	TypeConversationStarted  Type = "conversation.started"
	TypeUserAppended         Type = "user.appended"
	TypeSystemPromptSet      Type = "systemprompt.set"
	TypeSystemPromptReplaced Type = "systemprompt.replaced"
	TypeSystemPromptLocked   Type = "systemprompt.locked"
	TypeSystemPromptUnlocked Type = "systemprompt.unlocked"
	TypeReasoningAppended    Type = "reasoning.appended"
	TypeLLMTextAppended      Type = "llm_text.appended"
	TypeToolCalled           Type = "tool.called"
	TypeToolResult           Type = "tool.result"
	TypeBlocksReordered      Type = "blocks.reordered"
	TypeBlocksRemoved        Type = "blocks.removed"
	TypeBlockAnnotated       Type = "block.annotated"
	TypeBlockSplit           Type = "block.split"
	TypeBlockInserted        Type = "block.inserted"
	TypeTurnCompacted        Type = "turn.compacted"
	TypeDataSet              Type = "data.set"
	TypeInferenceStarted     Type = "inference.started"
	TypeInferenceFinished    Type = "inference.finished"
	TypeInferenceFailed      Type = "inference.failed"
	TypeRequestCompleted     Type = "request.completed"
	TypeRequestFailed        Type = "request.failed"
	TypeMessageRemoved       Type = "message.removed"
	TypeFindingRecorded      Type = "finding.recorded"
)

// Kind says what a block is, which decides how a provider renders it
// (system message, user message, assistant text, tool call, ...).
type Kind string

// Block kinds.
const (
	KindSystem     Kind = "system"
	KindUser       Kind = "user"
	KindLLMText    Kind = "llm_text"
	KindToolCall   Kind = "tool_call"
	KindToolResult Kind = "tool_result"
	KindReasoning  Kind = "reasoning"
	KindOther      Kind = "other"
)

// Valid reports whether k is one of the block kinds above.
func (k Kind) Valid() bool {
	switch k {
	case KindSystem, KindUser, KindLLMText, KindToolCall, KindToolResult, KindReasoning, KindOther:
		return true
	}
	return false
}

// Trust records who wrote a block's text. Role markers and instructions are
// only ever honoured in trusted text; untrusted text (from a user, a model
// or a tool) is data, however it is phrased.
type Trust string

// Trust levels. The zero value is untrusted: forgetting to set trust must
// never grant it.
const (
	Untrusted Trust = ""
	Trusted   Trust = "trusted"
)

// Valid reports whether t is a known trust level.
func (t Trust) Valid() bool { return t == Untrusted || t == Trusted }

// Well-known block metadata keys.
const (
	// MetaSection is the prompt section a block belongs to (system,
	// user_context, team_context, conversation, post_conversation).
	MetaSection = "section"
	// MetaSystemPromptSource says which middleware or template wrote a
	// system block's text.
	MetaSystemPromptSource = "systemprompt.source"
	// MetaSystemPromptLock marks a system block that middlewares must not
	// replace; systemprompt.locked sets it (to the actor who locked it) and
	// systemprompt.unlocked removes it.
	MetaSystemPromptLock = "systemprompt.lock"
	// MetaParts is a digest of what a block holds besides its text: the
	// images, files and audio of a message, the built-in tools' items a
	// model returned. Two blocks of equal text whose other content
	// differs are not the same block (for threading by content and for
	// the checks), and this says so without comparing that content.
	MetaParts = "gateway.parts"
)

// Block is one element of a Turn as events carry it: a fork copies whole
// blocks, a compaction inserts a summary block, a split produces several.
// The projector's Turn is an ordered list of these.
type Block struct {
	ID    string            `msgpack:"id" json:"id"`
	Kind  Kind              `msgpack:"kind" json:"kind"`
	Text  string            `msgpack:"text,omitempty" json:"text,omitempty"`
	Trust Trust             `msgpack:"trust,omitempty" json:"trust,omitempty"`
	Meta  map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
	// CallID ties a tool_call block to its tool_result block.
	CallID string `msgpack:"call_id,omitempty" json:"call_id,omitempty"`
	// ToolName and Arguments (JSON text) describe a tool call.
	ToolName  string `msgpack:"tool,omitempty" json:"tool,omitempty"`
	Arguments string `msgpack:"args,omitempty" json:"arguments,omitempty"`
	// IsError marks a tool result that reports a failure to the model.
	IsError bool `msgpack:"is_error,omitempty" json:"is_error,omitempty"`
	// Encrypted holds a provider's opaque reasoning payload, replayed to
	// the provider verbatim.
	Encrypted string `msgpack:"enc,omitempty" json:"encrypted,omitempty"`
	// Untrusted lists the byte ranges of Text that template variables
	// filled in (file contents, git output, request data, the clock):
	// untrusted whatever Trust says, since nobody vouched for their words.
	// Only the rest of the text, the operator's own, may act as
	// instructions (role markers). Empty means the whole text is as
	// trusted as Trust says. It is not part of what a model receives, so
	// the Turn's hash leaves it out.
	Untrusted []Span `msgpack:"untrusted,omitempty" json:"untrusted,omitempty"`
}

// Span is the byte range [Start, End) of a text that the variable Var
// ("file:AGENTS.md", "system:time", ...) filled in when a template was
// rendered. Spans are how the log says which words the operator wrote and
// which came from elsewhere.
type Span struct {
	Start int    `msgpack:"start" json:"start"`
	End   int    `msgpack:"end" json:"end"`
	Var   string `msgpack:"var,omitempty" json:"var,omitempty"`
}

// ValidateSpans checks that spans lie inside a text of n bytes, each
// non-empty, in order and without overlap, naming the first one that does
// not; field is the field's name in the message.
func ValidateSpans(field string, spans []Span, n int) error {
	end := 0
	for i, s := range spans {
		switch {
		case s.Start < end:
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "starts at %d, before the end of the previous span (%d); spans are in order and do not overlap", s.Start, end)
		case s.End <= s.Start:
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "is empty or reversed (%d-%d)", s.Start, s.End)
		case s.End > n:
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "ends at %d, past the text's %d bytes", s.End, n)
		}
		end = s.End
	}
	return nil
}

// legacyCallPrefix starts the call ID of a legacy function call (see
// LegacyFunctionCallID).
const legacyCallPrefix = "function:"

// LegacyFunctionCallID is the call ID of a tool call and result made by
// OpenAI's legacy function calling (an assistant message's function_call,
// answered by a message of role "function"), which carries no ID: the
// function's name, so that a result pairs with the latest call of the
// function it names, as the API pairs them. Unlike other call IDs it is
// not unique to a call (IsLegacyFunctionCallID).
func LegacyFunctionCallID(name string) string { return legacyCallPrefix + name }

// IsLegacyFunctionCallID reports whether id is a LegacyFunctionCallID, one
// that two calls of the same function share.
func IsLegacyFunctionCallID(id string) bool { return strings.HasPrefix(id, legacyCallPrefix) }

// Validate checks the fields every block needs, naming the first one that
// is wrong.
func (b Block) Validate() error {
	if b.ID == "" {
		return fieldErr("id", "is empty")
	}
	if !b.Kind.Valid() {
		return fieldErr("kind", "is %q, not a known block kind", b.Kind)
	}
	if !b.Trust.Valid() {
		return fieldErr("trust", "is %q; use %q or leave it empty for untrusted", b.Trust, Trusted)
	}
	if (b.Kind == KindToolCall || b.Kind == KindToolResult) && b.CallID == "" {
		return fieldErr("call_id", "is empty on a %s block", b.Kind)
	}
	if b.Kind == KindToolCall && b.ToolName == "" {
		return fieldErr("tool", "is empty on a tool_call block")
	}
	return ValidateSpans("untrusted", b.Untrusted, len(b.Text))
}

// Clone returns a copy of b that shares no map or slice with it, so a
// projection handed to a caller cannot be changed behind the log's back.
func (b Block) Clone() Block {
	if b.Meta != nil {
		m := make(map[string]string, len(b.Meta))
		for k, v := range b.Meta {
			m[k] = v
		}
		b.Meta = m
	}
	if b.Untrusted != nil {
		b.Untrusted = append([]Span(nil), b.Untrusted...)
	}
	return b
}
