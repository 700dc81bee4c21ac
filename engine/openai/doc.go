// Package openai is an engine.Engine for any server that speaks the OpenAI
// Chat Completions API: OpenAI itself, Ollama (http://127.0.0.1:11434/v1),
// vLLM (http://127.0.0.1:8000/v1), llama.cpp's llama-server
// (http://127.0.0.1:8080/v1) and the many proxies that imitate them.
//
// It uses the official OpenAI Go SDK for the wire format, with the SDK's own
// retries switched off: turnlog's retry middleware decides what to retry,
// and it retries only errors marked with engine.Transient.
//
// # From a Turn to messages
//
// Chat Completions takes a flat list of role-tagged messages, so the Turn's
// blocks are rendered in order as follows:
//
//   - system: a system message.
//   - user: a user message.
//   - llm_text: assistant content.
//   - tool_call: a function call in an assistant message's tool_calls.
//     Consecutive llm_text and tool_call blocks (reasoning blocks between
//     them do not interrupt) form ONE assistant message, because the API
//     requires every tool call of a model turn to sit in one assistant
//     message followed by the tool messages that answer it. Several text
//     blocks in one assistant message are joined with a blank line.
//     Empty arguments are sent as "{}", since servers parse them as JSON.
//   - tool_result: a tool message whose tool_call_id is the block's CallID;
//     an error result (IsError) is prefixed with "error: ", so the model
//     knows the call failed even though the message has no error flag.
//   - reasoning: not sent. Chat Completions has no input item for reasoning
//     (unlike the Responses API), and servers that return reasoning_content
//     (DeepSeek) reject or ignore it on input. The block stays in the Turn
//     and in the log; only this rendering drops it.
//   - other (e.g. a compaction summary): a system message when it is
//     trusted and stands before the first user message (it is then part of
//     the operator's preamble); otherwise assistant content prefixed with
//     "[summary] ". Never a user message: the model follows user messages as
//     instructions, and a summary is a record of what was said, not a
//     request. Never a system message after the conversation has started or
//     when untrusted: several servers' chat templates reject system messages
//     in the middle, and untrusted text must not gain system authority.
//
// # From a response to blocks
//
// The output is, in this order: one reasoning block when the server returned
// reasoning text (the non-standard reasoning_content field of DeepSeek, vLLM
// and llama.cpp, or reasoning of Ollama and OpenRouter), one llm_text block
// with the content (or the refusal, when there is no content), and one
// tool_call block per tool call. Block IDs are left empty for the chain to
// assign; a tool call without an ID from the server gets a random "call_" ID
// so that its result can be matched to it.
package openai
