package providertest

import (
	"encoding/json"
	"net/http"
)

// stream sends the message as the API's server-sent events: message_start,
// a ping, per block content_block_start, its deltas and content_block_stop,
// then message_delta with the stop reason and message_stop.
func (s *Messages) stream(w http.ResponseWriter, m map[string]any) {
	ev := newSSE(w)
	start := map[string]any{}
	for k, v := range m {
		start[k] = v
	}
	start["content"], start["stop_reason"] = []any{}, nil
	start["usage"] = map[string]any{"input_tokens": 11, "output_tokens": 1}
	ev.event("message_start", map[string]any{"type": "message_start", "message": start})
	ev.event("ping", map[string]any{"type": "ping"})
	for i, b := range m["content"].([]map[string]any) {
		delta := func(d map[string]any) {
			ev.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		switch b["type"] {
		case "thinking":
			ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			for _, c := range chunks(b["thinking"].(string)) {
				delta(map[string]any{"type": "thinking_delta", "thinking": c})
			}
			delta(map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "redacted_thinking":
			ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": b})
		case "text":
			ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for _, c := range chunks(b["text"].(string)) {
				delta(map[string]any{"type": "text_delta", "text": c})
			}
		case "tool_use":
			ev.event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			delta(map[string]any{"type": "input_json_delta", "partial_json": ""})
			for _, c := range chunks(string(in)) {
				delta(map[string]any{"type": "input_json_delta", "partial_json": c})
			}
		}
		ev.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	ev.event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": m["stop_reason"], "stop_sequence": nil}, "usage": map[string]any{"output_tokens": 7}})
	ev.event("message_stop", map[string]any{"type": "message_stop"})
}
