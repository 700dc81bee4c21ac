// Package anthropic is an engine.Engine for the Anthropic Messages API
// (POST /v1/messages), with extended thinking: the provider "anthropic" of
// a profile. It uses the official Go SDK (github.com/anthropics/anthropic-sdk-go)
// with the SDK's own retries off: turnlog's retry middleware retries what
// this engine marks engine.Transient (408, 409, 429, 5xx and 529,
// overloaded_error, api_error and rate_limit_error events inside a stream,
// network failures, a stream cut short).
//
// # From a Turn to a request
//
//   - system blocks become the top-level "system" field, one text block
//     each, in order, wherever they stand in the Turn: the Messages API has
//     no system role, and a system prompt is sent once, never also as a
//     message. A trusted "other" block before the first user message (the
//     operator's preamble) joins them.
//   - user blocks and tool results form user messages; tool_result blocks
//     carry the call ID as tool_use_id and IsError as is_error, and come
//     first in their message, as the API requires.
//   - llm_text, tool_call and reasoning blocks form assistant messages, in
//     the Turn's order: text blocks, tool_use blocks (the call ID as id,
//     the arguments as input) and the thinking blocks a reasoning block
//     stores (see below), unchanged. Consecutive blocks of one side make
//     one message. Empty text is not sent (the API rejects empty text
//     blocks); an empty tool result is sent without content.
//   - other blocks after the conversation started, and untrusted ones (a
//     compaction summary) become a text block prefixed with "[summary] "
//     on the user's side, joined to the user message beside it: a record
//     of what was said, marked as such, never the system prompt. Not on
//     the assistant's side: after a compaction the summary is the first
//     conversation block, and it would join the assistant turn after it,
//     whose thinking must come back as it was returned.
//
// Messages alternate, user first: consecutive blocks of one side are one
// message, and a Turn whose first message would be the model's is refused
// before any request, naming the block. Anthropic's own endpoint now
// accepts an assistant message first and combines consecutive turns of
// one role, but Amazon Bedrock answers "messages: first message must use
// the "user" role" and "roles must alternate", as Anthropic's endpoint
// itself did through most of 2024; a request valid under the strict rule
// is valid wherever the base URL points.
//
// A reasoning block this engine did not write (another provider's) is not
// sent: the API would reject thinking without its signature. One that
// would not be followed, in its assistant message, by text or a tool call
// is refused before any request, naming the block: the reasoningguard
// middleware repairs or refuses such Turns.
//
// # Thinking blocks, byte for byte
//
// The consecutive thinking and redacted_thinking blocks of a response are
// stored as ONE reasoning block, followed by the text or tool call they
// preceded, so that the Turn's adjacency rule (a reasoning block is
// immediately followed by its output) holds for a run of several. The
// block's Text is the thinking texts joined by a blank line (what replay
// shows); Encrypted is a JSON array describing the run in order, each
// thinking block with its signature and the byte length of its text in
// Text, each redacted_thinking block with its data; MetaThinking marks the
// block. Rendering rebuilds the blocks from exactly these bytes and refuses
// a block whose Text does not fit the lengths, so an edited log is refused
// here, and `turnlog replay --verify` reports the edit, since the input
// hash covers Text, Encrypted and Meta.
package anthropic
