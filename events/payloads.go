package events

import "time"

// Payload is the typed body of an event. Each event type has exactly one
// payload type; EventType ties the two together so an envelope can never
// carry a payload of another type.
type Payload interface {
	EventType() Type
	// Validate checks the payload's own fields, naming the first bad one.
	Validate() error
}

// ConversationStarted opens a conversation. A fork carries the Turn it
// starts from (Blocks and Data) and where it came from, so the new log is
// complete on its own and still says which history it branched off.
type ConversationStarted struct {
	Profile    string            `msgpack:"profile,omitempty" json:"profile,omitempty"`
	ForkedFrom string            `msgpack:"forked_from,omitempty" json:"forked_from,omitempty"`
	ForkedAt   int               `msgpack:"forked_at,omitempty" json:"forked_at,omitempty"`
	Blocks     []Block           `msgpack:"blocks,omitempty" json:"blocks,omitempty"`
	Data       map[string]string `msgpack:"data,omitempty" json:"data,omitempty"`
}

// UserAppended adds a user message at the end of the Turn.
type UserAppended struct {
	BlockID string            `msgpack:"block_id" json:"block_id"`
	Text    string            `msgpack:"text" json:"text"`
	Trust   Trust             `msgpack:"trust,omitempty" json:"trust,omitempty"`
	Meta    map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
}

// SystemPromptSet inserts a new system block at Index (0 is the front). A
// prompt built from a template records the template's hash and text, the
// variable values it was rendered with and where in Text those values
// went (Untrusted), so replay can say exactly where it came from, render
// it again from the log alone, and show which words the operator wrote.
type SystemPromptSet struct {
	BlockID      string            `msgpack:"block_id" json:"block_id"`
	Text         string            `msgpack:"text" json:"text"`
	Index        int               `msgpack:"index,omitempty" json:"index,omitempty"`
	Trust        Trust             `msgpack:"trust,omitempty" json:"trust,omitempty"`
	Meta         map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
	TemplateHash string            `msgpack:"template_hash,omitempty" json:"template_hash,omitempty"`
	Variables    map[string]string `msgpack:"vars,omitempty" json:"variables,omitempty"`
	// Untrusted are the block's variable spans (see Block.Untrusted).
	Untrusted []Span `msgpack:"untrusted,omitempty" json:"untrusted,omitempty"`
	// Template is the template's text, whose hash is TemplateHash: with
	// Variables it is all `replay --rerun` needs to render the prompt
	// again, whatever the installation's templates have become.
	Template string `msgpack:"template,omitempty" json:"template,omitempty"`
}

// SystemPromptReplaced changes the text of an existing system block, in
// place: the block keeps its ID and position. The previous text is kept in
// the event, so the full history of every system prompt is readable from
// the log alone. Meta is merged into the block's metadata; an empty value
// deletes a key. Untrusted replaces the block's variable spans (none: the
// new text is the operator's throughout).
type SystemPromptReplaced struct {
	BlockID      string            `msgpack:"block_id" json:"block_id"`
	Text         string            `msgpack:"text" json:"text"`
	Previous     string            `msgpack:"previous" json:"previous"`
	Meta         map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
	TemplateHash string            `msgpack:"template_hash,omitempty" json:"template_hash,omitempty"`
	Variables    map[string]string `msgpack:"vars,omitempty" json:"variables,omitempty"`
	Reason       string            `msgpack:"reason,omitempty" json:"reason,omitempty"`
	// PreviousSource is the systemprompt.source the block had before (""
	// when it had none, as an imported block written before sources were
	// recorded): with the new source in Meta, the event says whose prompt
	// gave way to whose, e.g. "import" to "template" under a profile's
	// prompt_policy: replace.
	PreviousSource string `msgpack:"prev_source,omitempty" json:"previous_source,omitempty"`
	// Untrusted, Template: as in SystemPromptSet.
	Untrusted []Span `msgpack:"untrusted,omitempty" json:"untrusted,omitempty"`
	Template  string `msgpack:"template,omitempty" json:"template,omitempty"`
	// PreviousTemplateHash is the hash of the template the previous text
	// was rendered from, when it was: a rebuild that changed templates
	// names both.
	PreviousTemplateHash string `msgpack:"prev_template_hash,omitempty" json:"previous_template_hash,omitempty"`
}

// SystemPromptLocked records that an operator locked a system block: no
// middleware replaces, appends to or rebuilds it, nor puts another prompt
// in front of it, until a SystemPromptUnlocked. The projector sets the
// block's systemprompt.lock metadata to the event's actor, which is what
// the middlewares check, so the lock is part of the Turn and of every
// snapshot, fork and export of it.
type SystemPromptLocked struct {
	BlockID string `msgpack:"block_id" json:"block_id"`
	Reason  string `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// SystemPromptUnlocked records that an operator lifted a lock: the block's
// systemprompt.lock metadata is removed, and the profile's middlewares
// manage the prompt again from the next model call.
type SystemPromptUnlocked struct {
	BlockID string `msgpack:"block_id" json:"block_id"`
	Reason  string `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// ReasoningAppended adds a model's reasoning at the end of the Turn.
// Encrypted is the provider's opaque form, kept to send back verbatim.
type ReasoningAppended struct {
	BlockID   string            `msgpack:"block_id" json:"block_id"`
	Text      string            `msgpack:"text,omitempty" json:"text,omitempty"`
	Encrypted string            `msgpack:"enc,omitempty" json:"encrypted,omitempty"`
	Meta      map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
}

// LLMTextAppended adds the model's visible answer text.
type LLMTextAppended struct {
	BlockID string            `msgpack:"block_id" json:"block_id"`
	Text    string            `msgpack:"text" json:"text"`
	Meta    map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
}

// ToolCalled records a tool call the model asked for.
type ToolCalled struct {
	BlockID   string            `msgpack:"block_id" json:"block_id"`
	CallID    string            `msgpack:"call_id" json:"call_id"`
	Name      string            `msgpack:"name" json:"name"`
	Arguments string            `msgpack:"args,omitempty" json:"arguments,omitempty"`
	Meta      map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
}

// ToolResult records what a tool returned for a call; IsError marks a
// failure that is reported back to the model rather than ending the request.
type ToolResult struct {
	BlockID string            `msgpack:"block_id" json:"block_id"`
	CallID  string            `msgpack:"call_id" json:"call_id"`
	Text    string            `msgpack:"text" json:"text"`
	IsError bool              `msgpack:"is_error,omitempty" json:"is_error,omitempty"`
	Meta    map[string]string `msgpack:"meta,omitempty" json:"meta,omitempty"`
}

// BlocksReordered sets a new order for the Turn's blocks. Order lists every
// block ID exactly once: a reorder that dropped a block would lose history
// silently, so the projector rejects it.
type BlocksReordered struct {
	Order  []string `msgpack:"order" json:"order"`
	Reason string   `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// BlocksRemoved drops blocks from the Turn, for example a reasoning block
// without its follower that a guard repaired. The reason is kept so replay
// shows what was dropped and why.
type BlocksRemoved struct {
	BlockIDs []string `msgpack:"block_ids" json:"block_ids"`
	Reason   string   `msgpack:"reason" json:"reason"`
}

// BlockAnnotated merges metadata into a block (an empty value deletes a
// key), for flags such as a role marker found in untrusted text.
type BlockAnnotated struct {
	BlockID string            `msgpack:"block_id" json:"block_id"`
	Meta    map[string]string `msgpack:"meta" json:"meta"`
	Reason  string            `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// BlockSplit replaces one block by several, in place, for example trusted
// text with role markers split into role blocks.
type BlockSplit struct {
	BlockID string  `msgpack:"block_id" json:"block_id"`
	Into    []Block `msgpack:"into" json:"into"`
	Reason  string  `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// TurnCompacted removes old blocks and, when Summary is set, inserts the
// summary where the first removed block stood.
type TurnCompacted struct {
	Removed []string `msgpack:"removed" json:"removed"`
	Summary *Block   `msgpack:"summary,omitempty" json:"summary,omitempty"`
	Reason  string   `msgpack:"reason,omitempty" json:"reason,omitempty"`
}

// DataSet changes the Turn's request/context values (timezone, page
// context, profile, ...). Unset keys are removed.
type DataSet struct {
	Values map[string]string `msgpack:"values,omitempty" json:"values,omitempty"`
	Unset  []string          `msgpack:"unset,omitempty" json:"unset,omitempty"`
}

// InferenceStarted is recorded right before a model call. InputHash is the
// hash of the exact Turn sent, so anyone can later prove what the model saw
// by re-projecting the log up to this event.
type InferenceStarted struct {
	InferenceID      string `msgpack:"inference_id" json:"inference_id"`
	Model            string `msgpack:"model" json:"model"`
	InputHash        string `msgpack:"input_hash" json:"input_hash"`
	SystemPromptID   string `msgpack:"sp_id,omitempty" json:"system_prompt_id,omitempty"`
	SystemPromptHash string `msgpack:"sp_hash,omitempty" json:"system_prompt_hash,omitempty"`
	Blocks           int    `msgpack:"blocks" json:"blocks"`
	// Purpose says why the call was made when it is not the answer to the
	// user, for example "compaction".
	Purpose string `msgpack:"purpose,omitempty" json:"purpose,omitempty"`
	// Instructions and InputBlocks are set for a call whose input is not
	// the conversation's Turn (a compaction's summary): its system text,
	// verbatim, and the IDs of the conversation's blocks the rest of the
	// input was made of, in order. With the log up to this event they are
	// what that input is rebuilt from, so that InputHash can be verified.
	Instructions string   `msgpack:"instructions,omitempty" json:"instructions,omitempty"`
	InputBlocks  []string `msgpack:"input_blocks,omitempty" json:"input_blocks,omitempty"`
	// TemplateHash is the hash of the template the call's system text was
	// rendered from, when it was (the provenance of Instructions), and
	// Untrusted the spans of Instructions that the template's variables
	// filled in (see Block.Untrusted).
	TemplateHash string `msgpack:"template_hash,omitempty" json:"template_hash,omitempty"`
	Untrusted    []Span `msgpack:"untrusted,omitempty" json:"untrusted,omitempty"`
	// Gateway describes a call the recording gateway (or import --calls)
	// recorded rather than a worker made: the API it was made in ("api"),
	// the content address of its request parameters ("params"), the
	// SHA-256 of the body bytes the client sent ("wire_sha256"), how its
	// conversation was found ("threading": explicit, inferred or new) and,
	// for a call whose body could not be read, why ("unparsed"). InputHash
	// is then the canonical hash of the request (see package calls), which
	// replay --verify re-renders from the Turn; nil for a worker's call.
	Gateway map[string]string `msgpack:"gateway,omitempty" json:"gateway,omitempty"`
}

// InferenceFinished closes a model call that succeeded. Since version 2 it
// records the request the engine sent (see Wire): the call's closing event
// carries it because the body's hash is known only once the request went
// out, which is after inference.started was committed.
type InferenceFinished struct {
	InferenceID      string        `msgpack:"inference_id" json:"inference_id"`
	PromptTokens     int           `msgpack:"prompt_tokens,omitempty" json:"prompt_tokens,omitempty"`
	CompletionTokens int           `msgpack:"completion_tokens,omitempty" json:"completion_tokens,omitempty"`
	StopReason       string        `msgpack:"stop,omitempty" json:"stop_reason,omitempty"`
	Duration         time.Duration `msgpack:"duration" json:"duration_ns"`
	// ResponseID is the provider's ID of the Responses API's response, what
	// a later call's previous_response_id names (the recording gateway's
	// calls): kept so that the gateway's index of it can be found, and
	// erased, from the log.
	ResponseID string `msgpack:"response_id,omitempty" json:"response_id,omitempty"`
	// OtherChoices keeps the answers a Chat Completions call asked for
	// besides the first (its "n" above 1), as a JSON array of the
	// response's choice objects ({"index", "message", "finish_reason"}):
	// the conversation goes on with the first choice, whose blocks the
	// outcome appends, and nothing else the model answered is missing from
	// the record. "" when there was one choice.
	OtherChoices string `msgpack:"other_choices,omitempty" json:"other_choices,omitempty"`
	// Logprobs keeps the log probabilities a Chat Completions call asked
	// for ("logprobs": true) of its first choice's tokens, as the JSON
	// object the provider wrote beside the message ({"content": [...],
	// "refusal": ...}; a stream's pieces joined): what the model answered
	// is not its text alone. "" when none were asked for, or when they
	// were larger than the record keeps (LogprobsOmitted).
	Logprobs string `msgpack:"logprobs,omitempty" json:"logprobs,omitempty"`
	// LogprobsOmitted is the size in bytes of a first choice's logprobs
	// left out of the record for their size (over calls.MaxLogprobsBytes;
	// for a stream, the size of the pieces it sent, about the object's);
	// 0 when they are kept or there were none.
	LogprobsOmitted int `msgpack:"logprobs_omitted,omitempty" json:"logprobs_omitted,omitempty"`
	Wire
}

// InferenceFailed closes a model call that failed; Transient says whether a
// retry may succeed. Wire is set when a request was sent before the call
// failed (a server's error, a broken stream), and empty when the call
// failed before any request left (the Turn could not be rendered).
type InferenceFailed struct {
	InferenceID string        `msgpack:"inference_id" json:"inference_id"`
	Error       string        `msgpack:"error" json:"error"`
	Transient   bool          `msgpack:"transient,omitempty" json:"transient,omitempty"`
	Duration    time.Duration `msgpack:"duration" json:"duration_ns"`
	// Partial is what the model had produced when the call failed and
	// the client had received (a stream's text, reasoning and tool-call
	// deltas before its error event or its cut), in order, as blocks.
	// It is kept so that an auditor can say what the model emitted and
	// the user saw; it is not part of the Turn (the projector adds
	// nothing of it): the client got no answer to continue from. Nil
	// when nothing arrived, or for an event recorded by an older turnlog.
	Partial []Block `msgpack:"partial,omitempty" json:"partial,omitempty"`
	Wire
}

// Wire is the request a model call sent, recorded in constant space: the
// SHA-256 of the body exactly as it went to the provider (taken at the
// HTTP transport, after the SDK serialised it; for an engine without HTTP,
// of the rendering its documentation defines), the version of the
// engine's rendering, and the call's parameters besides the Turn (model,
// options, tool declarations) as the engine's own JSON. With the Turn
// re-projected from the log they are what `turnlog replay --wire`
// renders the body again from; the hash proves the rendering is the one
// that was sent. All empty: no request was sent, or the event was
// recorded before version 2, or by an engine that does not report one.
type Wire struct {
	// SHA256 is the body's hash, 64 lowercase hex digits.
	SHA256 string `msgpack:"wire_sha256,omitempty" json:"wire_sha256,omitempty"`
	// Version names the rendering, "<engine>/<n>" (e.g. "openai-chat/1").
	Version string `msgpack:"wire_version,omitempty" json:"wire_version,omitempty"`
	// Params is the engine's JSON of the call's other inputs.
	Params string `msgpack:"wire_params,omitempty" json:"wire_params,omitempty"`
}

// IsZero reports whether no request is recorded.
func (w Wire) IsZero() bool { return w == Wire{} }

// RequestCompleted marks the end of a chat request that succeeded; the
// request ID is the event's Cause.
type RequestCompleted struct {
	Inferences int `msgpack:"inferences,omitempty" json:"inferences,omitempty"`
	// Profile names the profile that served the request, so that
	// `replay --rerun` re-runs each request with the chain that ran it
	// (empty in logs older than the field, and for requests served
	// otherwise).
	Profile string `msgpack:"profile,omitempty" json:"profile,omitempty"`
}

// RequestFailed marks the end of a chat request that cannot succeed, with a
// reason a person can act on.
type RequestFailed struct {
	Reason string `msgpack:"reason" json:"reason"`
	// TakenOver says the request stopped because an app's call through
	// the recording gateway landed in its conversation while it ran: the
	// conversation is the app's from then on, though this step, the
	// worker's, is its last (worker.NotAnApps reads it).
	TakenOver bool `msgpack:"taken_over,omitempty" json:"taken_over,omitempty"`
	// Profile names the profile the request ran with, as RequestCompleted's
	// does; empty when the request failed before one was chosen (an
	// unknown profile, a request that could not be read).
	Profile string `msgpack:"profile,omitempty" json:"profile,omitempty"`
}

// MessageRemoved records that `turnlog repair` removed a message from the
// conversation's subject that was not one of its steps (bytes that did not
// decode, another conversation's events): where it was, how large, its
// SHA-256 (hex) and headers, and why it was removed. The message itself is
// gone; this is the audit of what it was. Positions (<conversation>@<n>)
// are unchanged by a removal, stream sequences are not (see
// eventlog.RemoveCorrupt). It changes nothing in the Turn.
type MessageRemoved struct {
	Seq    int    `msgpack:"seq" json:"seq"`
	Size   int    `msgpack:"size" json:"size"`
	SHA256 string `msgpack:"sha256" json:"sha256"`
	// Headers are the message's NATS headers, several values of one
	// header joined by ", ".
	Headers map[string]string `msgpack:"headers,omitempty" json:"headers,omitempty"`
	Reason  string            `msgpack:"reason" json:"reason"`
}

// EventType implementations tie each payload to its catalog entry.

func (ConversationStarted) EventType() Type { return TypeConversationStarted }

// FindingRecorded records that a model call's input broke a rule of
// replay --check when the call was recorded (the recording gateway checks
// each call as it records it): the finding as the rules of that version
// saw it, beside the call, so that an auditor (and alerting on
// turnlog_findings_total) learns of it when it happens. It changes
// nothing in the Turn; replay --check and ls check the inputs again with
// their own version's rules.
type FindingRecorded struct {
	// InferenceID is the model call the finding is about.
	InferenceID string `msgpack:"inference_id" json:"inference_id"`
	// Rule is a check rule ID (duplicate_system_prompt, ...).
	Rule   string `msgpack:"rule" json:"rule"`
	Detail string `msgpack:"detail" json:"detail"`
	// Blocks are the IDs of the blocks concerned.
	Blocks []string `msgpack:"blocks,omitempty" json:"blocks,omitempty"`
}

func (FindingRecorded) EventType() Type      { return TypeFindingRecorded }
func (UserAppended) EventType() Type         { return TypeUserAppended }
func (SystemPromptSet) EventType() Type      { return TypeSystemPromptSet }
func (SystemPromptReplaced) EventType() Type { return TypeSystemPromptReplaced }
func (SystemPromptLocked) EventType() Type   { return TypeSystemPromptLocked }
func (SystemPromptUnlocked) EventType() Type { return TypeSystemPromptUnlocked }
func (ReasoningAppended) EventType() Type    { return TypeReasoningAppended }
func (LLMTextAppended) EventType() Type      { return TypeLLMTextAppended }
func (ToolCalled) EventType() Type           { return TypeToolCalled }
func (ToolResult) EventType() Type           { return TypeToolResult }
func (BlocksReordered) EventType() Type      { return TypeBlocksReordered }
func (BlocksRemoved) EventType() Type        { return TypeBlocksRemoved }
func (BlockAnnotated) EventType() Type       { return TypeBlockAnnotated }
func (BlockSplit) EventType() Type           { return TypeBlockSplit }
func (TurnCompacted) EventType() Type        { return TypeTurnCompacted }
func (DataSet) EventType() Type              { return TypeDataSet }
func (InferenceStarted) EventType() Type     { return TypeInferenceStarted }
func (InferenceFinished) EventType() Type    { return TypeInferenceFinished }
func (InferenceFailed) EventType() Type      { return TypeInferenceFailed }
func (RequestCompleted) EventType() Type     { return TypeRequestCompleted }
func (RequestFailed) EventType() Type        { return TypeRequestFailed }
func (MessageRemoved) EventType() Type       { return TypeMessageRemoved }
