package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestToolUseCutByMaxTokensIsFinished: Claude that reaches max_tokens
// while it writes a tool call's input ends the stream normally
// (stop_reason "max_tokens", message_stop) with the input's JSON cut
// short. The app got a whole answer, and the SDK a partial input; the
// gateway could not read the input as JSON and recorded the call failed,
// "the response cannot be read", its answer outside the Turn. The call is
// now finished, the tool call's arguments kept as they came.
func TestToolUseCutByMaxTokensIsFinished(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Writing the file."}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"write","input":{}}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"path\": \"a.txt\", \"content\": \"hel"}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":100}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, "", up.URL)
	resp, body := post(t, r.gw.URL+"/v1/messages", map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01"},
		`{"model":"c","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"write a.txt"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	conv := resp.Header.Get("Turnlog-Conversation")
	verify(t, r.log, conv)
	page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
	require.NoError(t, err)
	require.Len(t, page.Calls, 1)
	c := page.Calls[0]
	require.Equal(t, replay.CallFinished, c.Status, "failure: %s", c.Error)
	require.Len(t, c.Output, 2)
	assert.Equal(t, "Writing the file.", c.Output[0].Text)
	assert.Equal(t, events.KindToolCall, c.Output[1].Kind)
	assert.Equal(t, "write", c.Output[1].ToolName)
	assert.Equal(t, `{"path": "a.txt", "content": "hel`, c.Output[1].Arguments)
	var stop string
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.InferenceFinished); ok {
			stop = p.StopReason
		}
	}
	assert.Equal(t, "max_tokens", stop)
}

// TestToolUseCutByMaxTokensSentBack: after a tool call cut short by
// max_tokens, the app sends the answer back as its SDK parsed it: the
// input's JSON completed as far as it can be ({"path": "a.txt"}), which
// is no longer the model's text. replay --check reported the model's
// tool call removed (history_rewritten); a tool call whose arguments
// were not JSON may come back with the same call ID and tool and the
// arguments an SDK made of them. A call sent back with another ID is
// still reported.
func TestToolUseCutByMaxTokensSentBack(t *testing.T) {
	up := cutToolUseUpstream(t, `{"path": "a.txt", "content": "hel`)
	r := newRig(t, "", up.URL)
	for _, tc := range []struct {
		name, id string
		rules    []string
	}{
		{name: "same call", id: "toolu_1"},
		{name: "another call", id: "toolu_2", rules: []string{"history_rewritten"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "cut-" + tc.id
			headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv, "anthropic-version": "2023-06-01"}
			msgs := `{"role":"user","content":"write a.txt"}`
			resp, body := post(t, r.gw.URL+"/v1/messages", headers, `{"model":"c","max_tokens":100,"stream":true,"messages":[`+msgs+`]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			msgs += `,{"role":"assistant","content":[{"type":"tool_use","id":"` + tc.id + `","name":"write","input":{"path":"a.txt"}}]}` +
				`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"` + tc.id + `","content":"cut off"},{"type":"text","text":"go on"}]}`
			resp, body = post(t, r.gw.URL+"/v1/messages", headers, `{"model":"c","max_tokens":100,"stream":true,"messages":[`+msgs+`]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			verify(t, r.log, conv)
			assert.Equal(t, tc.rules, checkRules(t, r.log, conv))
		})
	}
}

// TestToolUseCutByMaxTokensSentBackEdited: a tool call cut short may come
// back as an SDK parsed it, and only so: the members the model finished
// as it wrote them, the one it was writing left out or kept as far as it
// got. Arguments the model did not write, under the same call ID and
// tool, are history the app rewrote.
func TestToolUseCutByMaxTokensSentBackEdited(t *testing.T) {
	up := cutToolUseUpstream(t, `{"path": "a.txt", "lines": [1, 2], "content": "hel`)
	r := newRig(t, "", up.URL)
	for _, tc := range []struct {
		name, input string
		rules       []string
	}{
		{name: "the member cut left out", input: `{"path":"a.txt","lines":[1,2]}`},
		{name: "the member cut kept", input: `{"path":"a.txt","lines":[1,2],"content":"hel"}`},
		{name: "a member changed", input: `{"path":"/etc/passwd","lines":[1,2]}`, rules: []string{"history_rewritten"}},
		{name: "a finished member left out", input: `{"path":"a.txt"}`, rules: []string{"history_rewritten"}},
		{name: "the member cut written on", input: `{"path":"a.txt","lines":[1,2],"content":"hello, world"}`, rules: []string{"history_rewritten"}},
		{name: "a member added", input: `{"path":"a.txt","lines":[1,2],"mode":"0777"}`, rules: []string{"history_rewritten"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "cut-" + strings.ReplaceAll(tc.name, " ", "-")
			headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv, "anthropic-version": "2023-06-01"}
			msgs := `{"role":"user","content":"write a.txt"}`
			_, _ = postOK(t, r.gw.URL+"/v1/messages", headers, `{"model":"c","max_tokens":100,"stream":true,"messages":[`+msgs+`]}`)
			msgs += `,{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"write","input":` + tc.input + `}]}` +
				`,{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":"cut off"},{"type":"text","text":"go on"}]}`
			_, _ = postOK(t, r.gw.URL+"/v1/messages", headers, `{"model":"c","max_tokens":100,"stream":true,"messages":[`+msgs+`]}`)
			verify(t, r.log, conv)
			assert.Equal(t, tc.rules, checkRules(t, r.log, conv))
		})
	}
}

// cutToolUseUpstream is a Messages upstream whose streamed answer is one
// tool call ("write", toolu_1) cut by max_tokens after the model wrote
// partial of its input.
func cutToolUseUpstream(t *testing.T, partial string) *httptest.Server {
	delta, _ := json.Marshal(map[string]any{"type": "content_block_delta", "index": 0, "delta": map[string]any{"type": "input_json_delta", "partial_json": partial}})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
		ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"write","input":{}}}`)
		ev("content_block_delta", string(delta))
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"output_tokens":100}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	}))
	t.Cleanup(up.Close)
	return up
}
