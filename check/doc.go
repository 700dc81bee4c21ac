// Package check applies named rules to the model inputs of a conversation:
// what `turnlog replay --check` reports, `turnlog ls` counts and the
// console marks. An input can match the log exactly (replay --verify
// proves that) and still be wrong: two system prompts, a reasoning block
// away from the text it produced, a tool call without its result, history
// that an earlier call sent edited behind the model's back.
//
// It is pure: it imports the event catalog and the projector only (no
// NATS, no provider SDK), so the worker's tools, the recording gateway,
// the console and library users all check with the same rules. A Checker
// is fed a conversation's events in log order, one at a time, and returns
// the findings of each model call as its inference.started goes by: a
// gateway or a console checks one call at a time as calls are recorded,
// and Conversation checks a whole log.
package check
