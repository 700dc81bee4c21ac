package providertest

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// Responses is a fake OpenAI Responses API server (POST <URL>/v1/responses).
type Responses struct {
	*httptest.Server
	recorder
	reply func(Request) Reply

	mu sync.Mutex
	// issued reasoning items by ID: what the server returned, which must
	// come back byte for byte.
	reasoning map[string]issuedReasoning
	calls     map[string]bool   // call IDs issued
	items     map[string]string // message and function call item IDs issued -> type
	// pairedWith maps the ID of the item that followed a reasoning item in
	// an output to that reasoning item's ID, and back: the API pairs them
	// by these IDs (see check).
	pairedWith map[string]string
}

type issuedReasoning struct {
	encrypted string
	summary   []string
}

// NewResponses starts a fake Responses API server that answers each valid
// request with reply(request); it stops when the test ends. Its base URL
// for an engine is URL + "/v1".
func NewResponses(t testing.TB, reply func(Request) Reply) *Responses {
	t.Helper()
	s := &Responses{reply: reply, reasoning: map[string]issuedReasoning{}, calls: map[string]bool{},
		items: map[string]string{}, pairedWith: map[string]string{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Issued reports whether id is a reasoning item this server returned.
func (s *Responses) Issued(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.reasoning[id]
	return ok
}

// openAIError answers with the API's error shape.
func (s *Responses) openAIError(w http.ResponseWriter, status int, typ, message string) {
	s.violate(message)
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": message, "type": typ, "param": "input", "code": nil}})
}

func (s *Responses) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/responses" {
		s.openAIError(w, http.StatusNotFound, "invalid_request_error", "no route "+r.Method+" "+r.URL.Path)
		return
	}
	raw, _ := io.ReadAll(r.Body)
	body := object(raw)
	if body == nil {
		s.openAIError(w, http.StatusBadRequest, "invalid_request_error", "the request body is not a JSON object")
		return
	}
	req, status, msg := s.check(body)
	if msg != "" {
		s.openAIError(w, status, "invalid_request_error", msg)
		return
	}
	req.APIKey, _ = strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	req.Raw = raw
	s.record(req)
	out := s.output(s.reply(req))
	resp := map[string]any{
		"id": fmt.Sprintf("resp_%d", s.next()), "object": "response", "created_at": 1741290958,
		"status": "completed", "error": nil, "incomplete_details": nil, "instructions": nil,
		"model": str(body["model"]), "output": out, "parallel_tool_calls": true, "store": false,
		"tool_choice": "auto", "tools": []any{}, "temperature": 1.0, "top_p": 1.0, "truncation": "disabled",
		"text":  map[string]any{"format": map[string]any{"type": "text"}},
		"usage": map[string]any{"input_tokens": 11, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 7, "output_tokens_details": map[string]any{"reasoning_tokens": 3}, "total_tokens": 18},
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	s.stream(w, resp, out)
}

// check applies the API's rules to a request body and returns what a reply
// function sees, or an HTTP status and the API's error message.
func (s *Responses) check(body map[string]json.RawMessage) (Request, int, string) {
	req := Request{Body: body, Stream: string(body["stream"]) == "true"}
	if str(body["model"]) == "" {
		return req, 400, "Missing required parameter: 'model'."
	}
	if string(body["store"]) != "false" {
		return req, 400, "turnlog's engine must be stateless: the request has store " + string(body["store"]) + ", want false"
	}
	var include []string
	_ = json.Unmarshal(body["include"], &include)
	if !slices.Contains(include, "reasoning.encrypted_content") {
		return req, 400, "the request does not include reasoning.encrypted_content: with store false, reasoning could not be sent back"
	}
	if in := str(body["instructions"]); in != "" {
		req.System = append(req.System, in)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(body["input"], &items); err != nil {
		return req, 400, "Invalid type for 'input': expected an array of input items."
	}
	open := map[string]bool{} // function calls without output yet
	var order []string
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rawItem := range items {
		item := object(rawItem)
		typ := str(item["type"])
		if typ == "" && item["role"] != nil {
			typ = "message"
		}
		switch typ {
		case "reasoning":
			id := str(item["id"])
			issued, ok := s.reasoning[id]
			if !ok {
				return req, 404, fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
			}
			if str(item["encrypted_content"]) != issued.encrypted {
				return req, 400, fmt.Sprintf("The encrypted content for item %s could not be verified.", id)
			}
			var summary []struct{ Type, Text string }
			if err := json.Unmarshal(item["summary"], &summary); err != nil || item["summary"] == nil {
				return req, 400, fmt.Sprintf("Missing required parameter: 'input[%d].summary'.", i)
			}
			got := make([]string, len(summary))
			for j, p := range summary {
				got[j] = p.Text
				if p.Type != "summary_text" {
					return req, 400, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'summary_text'.", p.Type)
				}
			}
			if !slices.Equal(got, issued.summary) {
				return req, 400, fmt.Sprintf("the summary of reasoning item %s was not sent back as returned: got %q, want %q", id, got, issued.summary)
			}
			// Its follower must come next, carrying its ID: the API pairs
			// them by the follower's ID (an ID-less message is not taken
			// for it).
			var next map[string]json.RawMessage
			if i+1 < len(items) {
				next = object(items[i+1])
			}
			if next == nil || str(next["id"]) != s.pairedWith[id] {
				return req, 400, fmt.Sprintf("Item '%s' of type 'reasoning' was provided without its required following item.", id)
			}
			req.Reasoning++
		case "message":
			role := str(item["role"])
			if status, msg := s.checkItemID(items, i, "msg", "message"); msg != "" {
				return req, status, msg
			}
			text := messageText(item["content"])
			switch role {
			case "system", "developer":
				if slices.Contains(req.System, text) {
					return req, 400, fmt.Sprintf("the system prompt %.40q is sent twice", text)
				}
				req.System = append(req.System, text)
			case "user":
				req.LastUser, req.ToolResults = text, nil
			case "assistant":
			default:
				return req, 400, fmt.Sprintf("Invalid value: '%s'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", role)
			}
		case "function_call":
			callID := str(item["call_id"])
			if status, msg := s.checkItemID(items, i, "fc", "function_call"); msg != "" {
				return req, status, msg
			}
			if callID == "" || str(item["name"]) == "" || !json.Valid([]byte(str(item["arguments"]))) {
				return req, 400, fmt.Sprintf("input[%d]: a function_call needs call_id, name and JSON arguments", i)
			}
			if !s.calls[callID] {
				return req, 400, fmt.Sprintf("function call %s was never returned by this server", callID)
			}
			open[callID] = true
			order = append(order, callID)
		case "function_call_output":
			callID := str(item["call_id"])
			if !open[callID] {
				return req, 400, fmt.Sprintf("No tool call found for function call output with call_id %s.", callID)
			}
			delete(open, callID)
			req.LastUser = ""
			req.ToolResults = append(req.ToolResults, str(item["output"]))
		default:
			return req, 400, fmt.Sprintf("input[%d]: item type %q is not one turnlog sends", i, typ)
		}
	}
	for _, id := range order {
		if open[id] {
			return req, 400, fmt.Sprintf("No tool output found for function call %s.", id)
		}
	}
	if len(items) == 0 {
		return req, 400, "Invalid 'input': empty array."
	}
	return req, 0, ""
}

// checkItemID checks the ID of a message or function call item, when it
// has one: an ID this server issued for an item of that type (its prefix
// says which), a message's status beside it, and, for the item that
// followed a reasoning item, that reasoning item immediately before it.
// Without store, an ID names nothing the server kept; with encrypted
// reasoning it pairs the item with its reasoning.
func (s *Responses) checkItemID(items []json.RawMessage, i int, prefix, typ string) (int, string) {
	item := object(items[i])
	id := str(item["id"])
	if id == "" {
		return 0, ""
	}
	if !strings.HasPrefix(id, prefix) {
		return 400, fmt.Sprintf("Invalid 'input[%d].id': '%s'. Expected an ID that begins with '%s'.", i, id, prefix)
	}
	if s.items[id] != typ {
		return 404, fmt.Sprintf("Item with id '%s' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input.", id)
	}
	if typ == "message" && (str(item["role"]) != "assistant" || str(item["status"]) == "") {
		return 400, fmt.Sprintf("Missing required parameter: 'input[%d].status'; an output message sent back has role assistant and its status.", i)
	}
	if rs := s.pairedWith[id]; rs != "" {
		var prev map[string]json.RawMessage
		if i > 0 {
			prev = object(items[i-1])
		}
		if prev == nil || str(prev["type"]) != "reasoning" || str(prev["id"]) != rs {
			return 400, fmt.Sprintf("Item '%s' of type '%s' was provided without its required 'reasoning' item: '%s'.", id, typ, rs)
		}
	}
	return 0, ""
}

// messageText is a message's text, whether content is a string or parts.
func messageText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []struct{ Text string }
	_ = json.Unmarshal(raw, &parts)
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

// output builds the response's output items for a reply, remembering the
// reasoning and call IDs it issues.
func (s *Responses) output(rep Reply) []map[string]any {
	var out []map[string]any
	s.mu.Lock()
	defer s.mu.Unlock()
	if rep.Reasoning != nil {
		id := fmt.Sprintf("rs_%d", s.next())
		enc := opaque("gAAAAB")
		summary := make([]map[string]any, len(rep.Reasoning))
		for i, p := range rep.Reasoning {
			summary[i] = map[string]any{"type": "summary_text", "text": p}
		}
		s.reasoning[id] = issuedReasoning{encrypted: enc, summary: slices.Clone(rep.Reasoning)}
		out = append(out, map[string]any{"id": id, "type": "reasoning", "summary": summary, "encrypted_content": enc})
	}
	if rep.Text != "" || len(rep.Calls) == 0 {
		id := fmt.Sprintf("msg_%d", s.next())
		s.items[id] = "message"
		out = append(out, map[string]any{
			"id": id, "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}, "logprobs": []any{}}},
		})
	}
	for _, c := range rep.Calls {
		callID, id := fmt.Sprintf("call_%d", s.next()), fmt.Sprintf("fc_%d", s.next())
		s.calls[callID], s.items[id] = true, "function_call"
		out = append(out, map[string]any{
			"id": id, "type": "function_call", "status": "completed",
			"call_id": callID, "name": c.Name, "arguments": string(argsObject(c.Arguments)),
		})
	}
	if len(out) > 1 && out[0]["type"] == "reasoning" {
		rs, follower := out[0]["id"].(string), out[1]["id"].(string)
		s.pairedWith[rs], s.pairedWith[follower] = follower, rs
	}
	return out
}

// stream sends the response as the API's server-sent events: created,
// in_progress, per item its added, part and delta events and done, then
// completed with the whole response.
func (s *Responses) stream(w http.ResponseWriter, resp map[string]any, out []map[string]any) {
	ev := newSSE(w)
	seq := 0
	send := func(typ string, fields map[string]any) {
		fields["type"] = typ
		fields["sequence_number"] = seq
		seq++
		ev.event(typ, fields)
	}
	start := map[string]any{}
	for k, v := range resp {
		start[k] = v
	}
	start["status"], start["output"], start["usage"] = "in_progress", []any{}, nil
	send("response.created", map[string]any{"response": start})
	send("response.in_progress", map[string]any{"response": start})
	for i, item := range out {
		id := item["id"]
		switch item["type"] {
		case "reasoning":
			send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": id, "type": "reasoning", "summary": []any{}}})
			for j, p := range item["summary"].([]map[string]any) {
				text := p["text"].(string)
				send("response.reasoning_summary_part.added", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "part": map[string]any{"type": "summary_text", "text": ""}})
				for _, c := range chunks(text) {
					send("response.reasoning_summary_text.delta", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "delta": c})
				}
				send("response.reasoning_summary_text.done", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "text": text})
				send("response.reasoning_summary_part.done", map[string]any{"item_id": id, "output_index": i, "summary_index": j, "part": p})
			}
		case "message":
			send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{"id": id, "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
			part := item["content"].([]any)[0].(map[string]any)
			text := part["text"].(string)
			send("response.content_part.added", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": map[string]any{"type": "output_text", "text": "", "annotations": []any{}}})
			for _, c := range chunks(text) {
				send("response.output_text.delta", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "delta": c, "logprobs": []any{}})
			}
			send("response.output_text.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "text": text, "logprobs": []any{}})
			send("response.content_part.done", map[string]any{"item_id": id, "output_index": i, "content_index": 0, "part": part})
		case "function_call":
			send("response.output_item.added", map[string]any{"output_index": i, "item": map[string]any{
				"id": id, "type": "function_call", "status": "in_progress", "call_id": item["call_id"], "name": item["name"], "arguments": ""}})
			args := item["arguments"].(string)
			for _, c := range chunks(args) {
				send("response.function_call_arguments.delta", map[string]any{"item_id": id, "output_index": i, "delta": c})
			}
			send("response.function_call_arguments.done", map[string]any{"item_id": id, "output_index": i, "arguments": args})
		}
		send("response.output_item.done", map[string]any{"output_index": i, "item": item})
	}
	send("response.completed", map[string]any{"response": resp})
}

// opaque returns a random token standing for encrypted content or a
// signature: base64 text, as the APIs send.
func opaque(prefix string) string {
	b := make([]byte, 48)
	_, _ = rand.Read(b)
	return prefix + base64.StdEncoding.EncodeToString(b)
}
