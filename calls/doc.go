// Package calls turns a model call made through the recording gateway (or
// read by import --calls) into conversation events, without NATS or HTTP:
// it reads a Chat Completions, Responses or Messages request and its
// response (JSON or server-sent events) into blocks, computes the call's
// canonical input hash, and expresses the call as events against the
// conversation's projected Turn (Plan), so that what is stored per call is
// what is new in it, not the history the client sent again.
//
// The rendering rules live here too (Render), so that replay --verify
// re-renders a recorded call's input from the log and checks it against
// the hash the gateway recorded, without importing any engine.
//
// How a call's input maps to blocks:
//
//   - Each element of the input (a message, a Responses item, the
//     instructions, Anthropic's system) is an item; an item is one or more
//     blocks (an assistant message with text and tool calls is an llm_text
//     block and a tool_call block per call).
//   - Each item's first block keeps the item's canonical JSON in its Meta
//     (MetaItem) unless the default rendering of the block reproduces it
//     exactly (a plain user message, a tool result); the item's other
//     blocks are marked MetaPart. Rendering the Turn's blocks therefore
//     gives the exact canonical input, and replay --verify proves it.
//   - Request parameters (model, temperature, tools, ...) are stored in
//     the Turn's data under their content address (ParamsKey, ValueKey):
//     tools sent with every call are stored once per conversation.
package calls
