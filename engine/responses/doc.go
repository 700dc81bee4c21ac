// Package responses is an engine.Engine for the OpenAI Responses API
// (POST /v1/responses), used statelessly: every request carries the whole
// conversation, "store" is false so OpenAI keeps nothing, and reasoning
// comes back encrypted ("include": ["reasoning.encrypted_content"]) so
// that it can be sent back on the following calls. It is the provider
// "openai_responses" of a profile.
//
// It uses the official OpenAI Go SDK with the SDK's own retries off, like
// engine/openai, and the same error contract: server errors are
// *openai.APIError values, marked engine.Transient when a retry may cure
// them (408, 409, 429, 5xx, network failures, a stream cut short, a failed
// response whose code says the server was at fault).
//
// # From a Turn to input items
//
// The Turn's blocks become input items in order:
//
//   - system: a message with role "system" at the block's position. The
//     Turn's order is the request's order: what the input hash proves is
//     what the model saw.
//   - user: a user message.
//   - llm_text: an assistant message (its phase, when the model gave one,
//     is sent back).
//   - tool_call: a function_call item with the block's call ID, name and
//     arguments ("{}" when empty).
//   - tool_result: a function_call_output item with the call ID; an error
//     result is prefixed with "error: ".
//   - reasoning: a reasoning item with the ID, encrypted content and
//     summary this engine stored (MetaItemID, Block.Encrypted, MetaSummary),
//     byte for byte, at the block's position, so it stands immediately
//     before the message or function call that followed it. A reasoning
//     block without them (another provider's, or an imported one) is not
//     sent: the API cannot verify it. A reasoning item that would not be
//     followed by an assistant message or a function call is refused
//     before any request, naming the block: the API rejects it, and the
//     reasoningguard middleware exists to repair or refuse such a Turn.
//   - other (a compaction summary): a system message when trusted and
//     before the first user message, else an assistant message prefixed
//     with "[summary] ", as in engine/openai.
//
// Output item IDs of messages and function calls are stored (MetaItemID).
// The item right after a reasoning item that is sent goes back with its ID
// (a message as the output message it was: ID, status "completed", its
// text as output_text, its phase), because the API pairs a reasoning item
// with its follower by the follower's ID: a reasoning item followed by an
// ID-less message is refused ("Item 'rs_…' of type 'reasoning' was
// provided without its required following item", reported with stateless
// input in langchainjs#9072/#9082, mastra#11103, OpenHands
// software-agent-sdk#1754). Every other message or call goes back without
// its ID: a follower whose reasoning item is not sent (another provider's,
// dropped by reasoningguard_repair) would be refused the other way ("Item
// 'msg_…' of type 'message' was provided without its required 'reasoning'
// item", mastra#22291, hermes-agent#97442), and an ID-less item requires
// nothing.
//
// # From a response to blocks
//
// Output items become blocks in the order the model produced them: a
// reasoning item a reasoning block (Text: the summary parts joined by a
// blank line, which replay shows; Encrypted: the encrypted content;
// MetaItemID and MetaSummary: the item's ID and exact summary parts), a
// message an llm_text block (its text, or its refusal), a function call a
// tool_call block. Block IDs are left to the chain.
package responses
