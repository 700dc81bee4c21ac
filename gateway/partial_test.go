package gateway_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// partialStreams are streams that deliver part of an answer and then
// fail, by API, as a provider sends them: the events before the failure,
// and how the stream fails ("cut": the connection is closed; "end": the
// body ends without the stream's final event; otherwise the last events
// are the provider's error).
var partialStreams = map[string]struct {
	path, body string
	events     []string
	end        string
}{
	"chat-error": {path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		events: []string{
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo wor"}}]}`,
			`data: {"error":{"type":"server_error","message":"The server had an error while processing your request"}}`,
		}},
	// An error event that echoes the key it was sent (KEY), as some
	// OpenAI-compatible servers' errors do.
	"chat-error-key": {path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		events: []string{
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`data: {"error":{"type":"invalid_request_error","message":"Incorrect API key provided: KEY"}}`,
		}},
	"chat-tool-error": {path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"weather in Paris?"}]}`,
		events: []string{
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"weather","arguments":""}}]}}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":\"Par"}}]}}]}`,
			`data: {"error":{"type":"server_error","message":"The server had an error"}}`,
		}},
	"chat-cut": {path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, end: "cut",
		events: []string{
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`,
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"lo wor"}}]}`,
		}},
	"chat-end": {path: "/v1/chat/completions", body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`, end: "end",
		events: []string{
			`data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello wor"}}]}`,
		}},
	"messages-error": {path: "/v1/messages", body: `{"model":"c","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
		events: []string{
			"event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
			"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"A greeting."}}`,
			"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}`,
			"event: content_block_start\ndata: " + `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
			"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel"}}`,
			"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lo wor"}}`,
			"event: error\ndata: " + `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		}},
	"messages-tool-error": {path: "/v1/messages", body: `{"model":"c","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"weather in Paris?"}]}`,
		events: []string{
			"event: message_start\ndata: " + `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`,
			"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"weather","input":{}}}`,
			"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"city\":\"Par"}}`,
			"event: error\ndata: " + `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		}},
	"responses-error": {path: "/v1/responses", body: `{"model":"m","stream":true,"input":"hi"}`,
		events: []string{
			"event: response.created\ndata: " + `{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}`,
			"event: response.output_item.added\ndata: " + `{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","status":"in_progress","role":"assistant","content":[]}}`,
			"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hel"}`,
			"event: response.output_text.delta\ndata: " + `{"type":"response.output_text.delta","item_id":"msg_1","output_index":0,"content_index":0,"delta":"lo wor"}`,
			"event: error\ndata: " + `{"type":"error","code":"server_error","message":"The server had an error"}`,
		}},
	"responses-failed": {path: "/v1/responses", body: `{"model":"m","stream":true,"input":"weather in Paris?"}`,
		events: []string{
			"event: response.created\ndata: " + `{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}`,
			"event: response.output_item.added\ndata: " + `{"type":"response.output_item.added","output_index":0,"item":{"id":"rs_1","type":"reasoning","summary":[]}}`,
			"event: response.reasoning_summary_text.delta\ndata: " + `{"type":"response.reasoning_summary_text.delta","item_id":"rs_1","output_index":0,"summary_index":0,"delta":"Needs the tool."}`,
			"event: response.output_item.added\ndata: " + `{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","status":"in_progress","call_id":"call_1","name":"weather","arguments":""}}`,
			"event: response.function_call_arguments.delta\ndata: " + `{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":1,"delta":"{\"city\":\"Par"}`,
			"event: response.failed\ndata: " + `{"type":"response.failed","response":{"id":"resp_1","status":"failed","output":[],"error":{"code":"server_error","message":"The model failed"}}}`,
		}},
}

// newPartialUpstream serves partialStreams, the one the call's X-Test
// header names.
func newPartialUpstream(t *testing.T) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s := partialStreams[r.Header.Get("X-Test")]
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range s.events {
			e = strings.ReplaceAll(e, "KEY", strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
			io.WriteString(w, e+"\n\n")
			w.(http.Flusher).Flush()
		}
		if s.end == "cut" {
			if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
				conn.Close()
			}
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestFailedStreamKeepsWhatTheClientReceived: a streamed answer that
// fails part-way (the provider's error event after a 200, a cut, an end
// without the final event) is recorded as failed, and what the client
// received before (text, reasoning, tool-call deltas) is in the record,
// as inference.failed's partial output, not in the Turn: the client got
// no answer to continue from. The record used to lose it.
func TestFailedStreamKeepsWhatTheClientReceived(t *testing.T) {
	up := newPartialUpstream(t)
	r := newRig(t, up.URL, up.URL)
	type block struct {
		Kind             events.Kind
		Text, Tool, Args string
	}
	for _, tc := range []struct {
		name    string
		test    string
		failure string
		partial []block
	}{
		{name: "chat completions error after text", test: "chat-error", failure: "server_error: The server had an error",
			partial: []block{{Kind: events.KindLLMText, Text: "Hello wor"}}},
		{name: "chat completions error in a tool call", test: "chat-tool-error", failure: "server_error",
			partial: []block{{Kind: events.KindToolCall, Tool: "weather", Args: `{"city":"Par`}}},
		{name: "chat completions stream cut", test: "chat-cut", failure: "cut",
			partial: []block{{Kind: events.KindLLMText, Text: "Hello wor"}}},
		{name: "chat completions stream ended without its final event", test: "chat-end", failure: "the stream ended before its final event",
			partial: []block{{Kind: events.KindLLMText, Text: "Hello wor"}}},
		{name: "messages error event", test: "messages-error", failure: "overloaded_error: Overloaded",
			partial: []block{{Kind: events.KindReasoning, Text: "A greeting."}, {Kind: events.KindLLMText, Text: "Hello wor"}}},
		{name: "messages error event in a tool call", test: "messages-tool-error", failure: "overloaded_error: Overloaded",
			partial: []block{{Kind: events.KindToolCall, Tool: "weather", Args: `{"city":"Par`}}},
		{name: "responses error event", test: "responses-error", failure: "The server had an error",
			partial: []block{{Kind: events.KindLLMText, Text: "Hello wor"}}},
		{name: "responses failed with its output empty", test: "responses-failed", failure: "The model failed",
			partial: []block{{Kind: events.KindReasoning, Text: "Needs the tool."}, {Kind: events.KindToolCall, Tool: "weather", Args: `{"city":"Par`}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := partialStreams[tc.test]
			conv := "partial-" + tc.test
			req, err := http.NewRequest(http.MethodPost, r.gw.URL+s.path, strings.NewReader(s.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Turnlog-Token", token)
			req.Header.Set("Turnlog-Conversation", conv)
			req.Header.Set("X-Test", tc.test)
			req.Header.Set("anthropic-version", "2023-06-01")
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			got, _ := io.ReadAll(resp.Body) // a cut stream ends in an error
			resp.Body.Close()
			require.Contains(t, string(got), strings.Split(s.events[0], "\n")[0], "the client received the stream's first event")

			// The outcome is recorded before the client's last byte; a
			// cut stream's, as the gateway reads the cut, which the
			// client may see first.
			require.Eventually(t, func() bool { _, _, f := inferences(t, r, conv); return len(f) == 1 }, 10*time.Second, 10*time.Millisecond)
			var failed events.InferenceFailed
			for _, e := range conversationEvents(t, r.log, conv) {
				if p, ok := e.Payload.(events.InferenceFailed); ok {
					failed = p
				}
			}
			assert.Contains(t, failed.Error, tc.failure)
			var partial []block
			for _, b := range failed.Partial {
				partial = append(partial, block{Kind: b.Kind, Text: b.Text, Tool: b.ToolName, Args: b.Arguments})
				assert.NotEmpty(t, b.ID)
			}
			assert.Equal(t, tc.partial, partial, "inference.failed keeps what the client received")

			turn, err := r.log.Load(context.Background(), conv)
			require.NoError(t, err)
			for _, b := range turn.Blocks {
				assert.Contains(t, []events.Kind{events.KindUser, events.KindSystem}, b.Kind, "the Turn holds the call's input alone, not %s %q", b.Kind, b.Text)
			}

			page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
			require.NoError(t, err)
			require.Len(t, page.Calls, 1)
			c := page.Calls[0]
			assert.Equal(t, replay.CallFailed, c.Status)
			assert.Empty(t, c.Output, "a failed call has no output to go on from")
			require.Len(t, c.Partial, len(tc.partial), "the calls view shows the partial output")
			for i, b := range c.Partial {
				assert.Equal(t, tc.partial[i].Kind, b.Kind)
			}
			verify(t, r.log, conv)
		})
	}
}

// TestImportedStreamKeepsWhatTheClientReceived: import --calls of a
// logged stream that failed part-way records what had arrived as the
// gateway does live.
func TestImportedStreamKeepsWhatTheClientReceived(t *testing.T) {
	r := newRig(t, "", "")
	rec, err := gateway.NewRecorder(gateway.Config{Log: r.log, Connected: r.srv.Conn.IsConnected, Token: token})
	require.NoError(t, err)
	stream := func(name string) string {
		var b strings.Builder
		for _, e := range partialStreams[name].events {
			b.WriteString(e + "\n\n")
		}
		return strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(b.String(), `\`, `\\`), `"`, `\"`), "\n", `\n`)
	}
	file := strings.Join([]string{
		`{"api":"messages","time":"2025-03-01T10:00:00Z","conversation":"imported-error","request":{"model":"c","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]},"response":"` + stream("messages-error") + `"}`,
		`{"api":"chat.completions","time":"2025-03-01T10:01:00Z","conversation":"imported-cut","request":{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]},"response":"` + stream("chat-cut") + `"}`,
	}, "\n")
	lines, err := gateway.ReadCalls(strings.NewReader(file), 1<<20)
	require.NoError(t, err)
	_, err = rec.Import(context.Background(), lines)
	require.NoError(t, err)
	for conv, want := range map[string][]string{"imported-error": {"A greeting.", "Hello wor"}, "imported-cut": {"Hello wor"}} {
		var texts []string
		for _, e := range conversationEvents(t, r.log, conv) {
			if p, ok := e.Payload.(events.InferenceFailed); ok {
				for _, b := range p.Partial {
					texts = append(texts, b.Text)
				}
			}
		}
		assert.Equal(t, want, texts, "%s: inference.failed keeps what the logged stream delivered", conv)
		turn, err := r.log.Load(context.Background(), conv)
		require.NoError(t, err)
		assert.Len(t, turn.Blocks, 1, "%s: the Turn holds the call's input alone", conv)
	}
}

// TestPartialOutputTooLargeToStore: a failed call whose partial output
// is larger than one NATS message is recorded failed for its own reason,
// saying that what it delivered is not recorded, as an answer too large
// is (turnlog_gateway_unstored_total{part="output"}): the partial output
// never keeps a call from being recorded.
func TestPartialOutputTooLargeToStore(t *testing.T) {
	big := strings.Repeat("x", 2*smallPayload)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"`+big+`"}}]}`+"\n\n")
		io.WriteString(w, `data: {"error":{"type":"server_error","message":"The server had an error"}}`+"\n\n")
	}))
	t.Cleanup(up.Close)
	r, m := newSmallRig(t, up.URL)
	resp, got := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "large-partial"},
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 200, resp.StatusCode)
	assert.Contains(t, string(got), big, "the app gets what the upstream sent")
	var failed []events.InferenceFailed
	for _, e := range conversationEvents(t, r.log, "large-partial") {
		if p, ok := e.Payload.(events.InferenceFailed); ok {
			failed = append(failed, p)
		}
	}
	require.Len(t, failed, 1, "the call is recorded")
	assert.Contains(t, failed[0].Error, "server_error: The server had an error", "failed for its own reason")
	assert.Contains(t, failed[0].Error, "too large to store, and is not recorded")
	assert.True(t, failed[0].Transient)
	assert.Nil(t, failed[0].Partial)
	assert.Contains(t, scrape(t, m), `turnlog_gateway_unstored_total{part="output"} 1`)
	verify(t, r.log, "large-partial")
}

// TestSpooledStreamKeepsWhatTheClientReceived: with --record-optional, a
// stream that failed part-way while NATS was away keeps what it delivered
// in the spool, and its record, once NATS is back, holds it as the live
// one does (the spool used to keep a cut stream's failure alone).
func TestSpooledStreamKeepsWhatTheClientReceived(t *testing.T) {
	up := newPartialUpstream(t)
	c := newCuttable(t, up.URL, 1<<20)
	c.cut(t)
	const key = "sk-spooled-secret-0123456789"
	for _, test := range []string{"chat-cut", "chat-end", "chat-error", "chat-error-key"} {
		req, err := http.NewRequest(http.MethodPost, c.gw.URL+"/v1/chat/completions", strings.NewReader(partialStreams[test].body))
		require.NoError(t, err)
		req.Header.Set("Turnlog-Token", token)
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Turnlog-Conversation", "spooled-"+test)
		req.Header.Set("X-Test", test)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		io.ReadAll(resp.Body) // a cut stream ends in an error
		resp.Body.Close()
	}
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 4 }, 10*time.Second, 10*time.Millisecond, "the calls wait in the spool")
	// The key an upstream's error echoed is not on disk in the spool.
	files, err := os.ReadDir(c.spool)
	require.NoError(t, err)
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(c.spool, f.Name()))
		require.NoError(t, err)
		assert.NotContains(t, string(data), key, "spool file %s", f.Name())
	}
	c.restore(t)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 20*time.Second, 20*time.Millisecond, "the spool drains once NATS is back")
	l, err := eventlog.Open(context.Background(), c.srv.Conn)
	require.NoError(t, err)
	for _, test := range []string{"chat-cut", "chat-end", "chat-error"} {
		var texts []string
		var failure string
		for _, e := range conversationEvents(t, l, "spooled-"+test) {
			if p, ok := e.Payload.(events.InferenceFailed); ok {
				failure = p.Error
				for _, b := range p.Partial {
					texts = append(texts, b.Text)
				}
			}
		}
		assert.NotEmpty(t, failure, "%s: recorded as failed", test)
		assert.Equal(t, []string{"Hello wor"}, texts, "%s: inference.failed keeps what the stream delivered", test)
	}
	var failure string
	for _, e := range conversationEvents(t, l, "spooled-chat-error-key") {
		if p, ok := e.Payload.(events.InferenceFailed); ok {
			failure = p.Error
		}
	}
	assert.Contains(t, failure, "Incorrect API key provided: ***", "the echoed key, overwritten as the client got it, recorded from the spool")
	assert.NotContains(t, failure, "sk-")
}
