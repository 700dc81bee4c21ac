package providertest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
)

// Messages is a fake Anthropic Messages API server (POST <URL>/v1/messages).
type Messages struct {
	*httptest.Server
	recorder
	reply func(Request) Reply

	mu sync.Mutex
	// issued is the content of every assistant message the server
	// returned that holds thinking, by message: thinking blocks must come
	// back unchanged in the assistant turn they belong to.
	issued   [][]map[string]any
	thinking map[string]string // signature -> thinking text
	redacted map[string]bool   // data issued
}

// NewMessages starts a fake Messages API server that answers each valid
// request with reply(request); it stops when the test ends. Its base URL
// for an engine is URL (requests go to /v1/messages).
func NewMessages(t testing.TB, reply func(Request) Reply) *Messages {
	t.Helper()
	s := &Messages{reply: reply, thinking: map[string]string{}, redacted: map[string]bool{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *Messages) anthropicError(w http.ResponseWriter, status int, typ, message string) {
	s.violate(message)
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}})
}

func (s *Messages) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		s.anthropicError(w, http.StatusNotFound, "not_found_error", "Not Found: "+r.Method+" "+r.URL.Path)
		return
	}
	if r.Header.Get("anthropic-version") == "" {
		s.anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	}
	raw, _ := io.ReadAll(r.Body)
	body := object(raw)
	if body == nil {
		s.anthropicError(w, http.StatusBadRequest, "invalid_request_error", "the request body is not a JSON object")
		return
	}
	req, thinkingOn, msg := s.check(body)
	if msg != "" {
		s.anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	req.APIKey = r.Header.Get("X-Api-Key")
	req.Raw = raw
	s.record(req)
	content, stop := s.content(s.reply(req), thinkingOn)
	m := map[string]any{
		"id": fmt.Sprintf("msg_%d", s.next()), "type": "message", "role": "assistant", "model": str(body["model"]),
		"content": content, "stop_reason": stop, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": 11, "output_tokens": 7, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, m)
		return
	}
	s.stream(w, m)
}

// block is one content block of a request message.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	Thinking  *string         `json:"thinking"`
	Signature *string         `json:"signature"`
	Data      string          `json:"data"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
}

// check applies the API's rules and returns what a reply function sees
// and whether thinking is on, or the API's error message.
func (s *Messages) check(body map[string]json.RawMessage) (Request, bool, string) {
	req := Request{Body: body, Stream: string(body["stream"]) == "true"}
	if str(body["model"]) == "" {
		return req, false, "model: Field required"
	}
	var maxTokens int
	if json.Unmarshal(body["max_tokens"], &maxTokens) != nil || maxTokens <= 0 {
		return req, false, "max_tokens: Field required"
	}
	thinkingOn := false
	if t := object(body["thinking"]); t != nil {
		switch str(t["type"]) {
		case "enabled":
			var budget int
			_ = json.Unmarshal(t["budget_tokens"], &budget)
			if budget < 1024 || budget >= maxTokens {
				return req, false, "thinking.budget_tokens: must be at least 1024 and less than max_tokens"
			}
			thinkingOn = true
		case "adaptive":
			thinkingOn = true
		}
	}
	// The system field: a string or text blocks. One prompt: no text twice.
	if raw := body["system"]; raw != nil {
		var text string
		if json.Unmarshal(raw, &text) == nil {
			req.System = []string{text}
		} else {
			var blocks []block
			if err := json.Unmarshal(raw, &blocks); err != nil {
				return req, false, "system: Input should be a valid string or a list of text blocks"
			}
			for _, b := range blocks {
				if b.Type != "text" || b.Text == "" {
					return req, false, "system: text content blocks must be non-empty"
				}
				if slices.Contains(req.System, b.Text) {
					return req, false, fmt.Sprintf("the system prompt %.40q is sent twice", b.Text)
				}
				req.System = append(req.System, b.Text)
			}
		}
	}
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(body["messages"], &msgs); err != nil || len(msgs) == 0 {
		return req, false, "messages: at least one message is required"
	}
	content := make([][]block, len(msgs))
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return req, false, fmt.Sprintf("messages.%d.role: Unexpected role %q. The Messages API accepts a top-level `system` parameter, not \"system\" as an input message role.", i, m.Role)
		}
		// The strict rule (see the package documentation): user first,
		// then alternating.
		if i == 0 && m.Role != "user" {
			return req, false, `messages: first message must use the "user" role`
		}
		if i > 0 && m.Role == msgs[i-1].Role {
			return req, false, fmt.Sprintf(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, m.Role)
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			content[i] = []block{{Type: "text", Text: text}}
		} else if err := json.Unmarshal(m.Content, &content[i]); err != nil {
			return req, false, fmt.Sprintf("messages.%d.content: Input should be a valid list", i)
		}
		hasThinking := false
		for j, b := range content[i] {
			where := fmt.Sprintf("messages.%d.content.%d", i, j)
			switch b.Type {
			case "text":
				if b.Text == "" {
					return req, false, where + ": text content blocks must be non-empty"
				}
				if slices.Contains(req.System, b.Text) {
					return req, false, fmt.Sprintf("%s: the system prompt %.40q is also sent as a message", where, b.Text)
				}
			case "thinking", "redacted_thinking":
				if m.Role != "assistant" {
					return req, false, where + ": thinking blocks may only appear in assistant messages"
				}
				if b.Type == "thinking" {
					if b.Thinking == nil || b.Signature == nil {
						return req, false, where + ".signature: Field required"
					}
					if want, ok := s.thinking[*b.Signature]; !ok || want != *b.Thinking {
						return req, false, where + ": Invalid `signature` in `thinking` block"
					}
				} else if !s.redacted[b.Data] {
					return req, false, where + ": Invalid `data` in `redacted_thinking` block"
				}
				hasThinking = true
				req.Reasoning++
			case "tool_use":
				if m.Role != "assistant" || b.ID == "" || b.Name == "" || object(b.Input) == nil {
					return req, false, where + ": a tool_use block needs an assistant message, an id, a name and an object input"
				}
			case "tool_result":
				if m.Role != "user" {
					return req, false, where + ": tool_result blocks may only appear in user messages"
				}
			default:
				return req, false, fmt.Sprintf("%s.type: %q is not a block turnlog sends", where, b.Type)
			}
		}
		if hasThinking && !s.issuedAsIs(content[i]) {
			return req, false, fmt.Sprintf("messages.%d: thinking blocks were not sent back unchanged in the assistant turn they belong to", i)
		}
	}
	// Tool use and results: each tool_use answered in the next message,
	// results first there, each result answering a tool_use just before.
	for i := range msgs {
		var uses, prevUses []string
		for _, b := range content[i] {
			if b.Type == "tool_use" {
				uses = append(uses, b.ID)
			}
		}
		if i > 0 {
			for _, b := range content[i-1] {
				if b.Type == "tool_use" {
					prevUses = append(prevUses, b.ID)
				}
			}
		}
		seenOther := false
		for j, b := range content[i] {
			if b.Type != "tool_result" {
				seenOther = true
				continue
			}
			if seenOther {
				return req, false, fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come first in the user message", i, j)
			}
			if !slices.Contains(prevUses, b.ToolUseID) {
				return req, false, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			}
		}
		if len(uses) > 0 {
			var answered []string
			if i+1 < len(msgs) {
				for _, b := range content[i+1] {
					if b.Type == "tool_result" {
						answered = append(answered, b.ToolUseID)
					}
				}
			}
			for _, id := range uses {
				if !slices.Contains(answered, id) {
					return req, false, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.", i, id)
				}
			}
		}
	}
	last := content[len(msgs)-1]
	if msgs[len(msgs)-1].Role == "user" {
		for _, b := range last {
			switch b.Type {
			case "text":
				req.LastUser = b.Text
			case "tool_result":
				req.ToolResults = append(req.ToolResults, toolResultText(b.Content))
			}
		}
		if len(req.ToolResults) > 0 {
			req.LastUser = ""
			if thinkingOn && len(msgs) > 1 {
				prev := content[len(msgs)-2]
				if len(prev) == 0 || (prev[0].Type != "thinking" && prev[0].Type != "redacted_thinking") {
					return req, false, fmt.Sprintf("messages.%d.content.0.type: Expected `thinking` or `redacted_thinking`, but found `%s`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).",
						len(msgs)-2, firstType(prev))
				}
			}
		}
	}
	return req, thinkingOn, ""
}

func firstType(bs []block) string {
	if len(bs) == 0 {
		return "nothing"
	}
	return bs[0].Type
}

// issuedAsIs reports whether an assistant message's content is exactly
// the content of a message this server returned.
func (s *Messages) issuedAsIs(got []block) bool {
	for _, want := range s.issued {
		if len(want) != len(got) {
			continue
		}
		same := true
		for k, w := range want {
			g := got[k]
			if w["type"] != g.Type {
				same = false
				break
			}
			switch g.Type {
			case "thinking":
				same = g.Thinking != nil && g.Signature != nil && w["thinking"] == *g.Thinking && w["signature"] == *g.Signature
			case "redacted_thinking":
				same = w["data"] == g.Data
			case "text":
				same = w["text"] == g.Text
			case "tool_use":
				in, _ := json.Marshal(w["input"])
				same = w["id"] == g.ID && w["name"] == g.Name && sameJSON(in, g.Input)
			}
			if !same {
				break
			}
		}
		if same {
			return true
		}
	}
	return false
}

// toolResultText is a tool_result's content as text.
func toolResultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var parts []block
	_ = json.Unmarshal(raw, &parts)
	out := ""
	for _, p := range parts {
		out += p.Text
	}
	return out
}

// content builds the answer's content blocks and stop reason, remembering
// what must come back unchanged.
func (s *Messages) content(rep Reply, thinkingOn bool) ([]map[string]any, string) {
	var out []map[string]any
	s.mu.Lock()
	defer s.mu.Unlock()
	if thinkingOn {
		for _, t := range rep.Reasoning {
			sig := opaque("EqQB")
			s.thinking[sig] = t
			out = append(out, map[string]any{"type": "thinking", "thinking": t, "signature": sig})
		}
		if rep.Redacted {
			data := opaque("EmwK")
			s.redacted[data] = true
			out = append(out, map[string]any{"type": "redacted_thinking", "data": data})
		}
	}
	if rep.Text != "" || len(rep.Calls) == 0 {
		out = append(out, map[string]any{"type": "text", "text": rep.Text})
	}
	stop := "end_turn"
	for _, c := range rep.Calls {
		var input map[string]any
		_ = json.Unmarshal(argsObject(c.Arguments), &input)
		out = append(out, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%02d", s.next()), "name": c.Name, "input": input})
		stop = "tool_use"
	}
	if thinkingOn && (len(rep.Reasoning) > 0 || rep.Redacted) {
		s.issued = append(s.issued, out)
	}
	return out, stop
}
