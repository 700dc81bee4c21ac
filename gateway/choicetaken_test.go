package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestAnotherChoiceTakenIsNoRewrite: an app asks for two answers ("n": 2)
// and goes on with the second, as picking the best of several is what "n"
// is for. The record keeps the first as the call's output and the second
// in other_choices; the next call sends the second back. replay --check
// (and the gateway's findings) reported history_rewritten, "the model's
// answer was removed", though the history the app sent is the model's own
// other answer. Sending back a text the model did not give is still
// reported.
func TestAnotherChoiceTakenIsNoRewrite(t *testing.T) {
	r := newRig(t, newChoicesUpstream(t).URL, "")
	for _, tc := range []struct {
		name  string
		taken string
		rules []string
	}{
		{name: "the second choice", taken: "answer B"},
		{name: "a text no choice holds", taken: "answer Z", rules: []string{"history_rewritten"}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				conv := fmt.Sprintf("taken-%s-%v", tc.taken[len(tc.taken)-1:], stream)
				headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}
				msgs := `{"role":"user","content":"hi"}`
				resp, out := post(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[%s]}`, stream, msgs))
				require.Equal(t, 200, resp.StatusCode, "%s", out)
				msgs += fmt.Sprintf(`,{"role":"assistant","content":%q},{"role":"user","content":"go on"}`, tc.taken)
				resp, out = post(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[%s]}`, stream, msgs))
				require.Equal(t, 200, resp.StatusCode, "%s", out)

				verify(t, r.log, conv)
				assert.Equal(t, tc.rules, checkRules(t, r.log, conv), "replay --check")
				var recorded []string
				for _, e := range conversationEvents(t, r.log, conv) {
					if p, ok := e.Payload.(events.FindingRecorded); ok {
						recorded = append(recorded, p.Rule)
					}
				}
				assert.Equal(t, tc.rules, recorded, "the gateway's findings")
			})
		}
	}
}

// TestAnotherChoicesToolCallEditedIsRewrite: the other choice an app goes
// on with is the model's only as the model wrote it. A tool call of that
// choice sent back with other arguments than the model's (the same ID and
// tool) is history the app rewrote, as it is for the first choice; the
// first choice's answer, gone from the input, is reported removed.
func TestAnotherChoicesToolCallEditedIsRewrite(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if strings.Contains(string(raw), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"answer A"},"finish_reason":"stop"}]}`+"\n\n")
			io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","model":"m","choices":[{"index":1,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_B","type":"function","function":{"name":"write","arguments":"{\"path\":\"a.txt\"}"}}]},"finish_reason":"tool_calls"}]}`+"\n\n")
			io.WriteString(w, "data: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[`+
			`{"index":0,"message":{"role":"assistant","content":"answer A"},"finish_reason":"stop"},`+
			`{"index":1,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_B","type":"function","function":{"name":"write","arguments":"{\"path\":\"a.txt\"}"}}]},"finish_reason":"tool_calls"}]}`)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	for _, tc := range []struct {
		name, args string
		rules      []string
	}{
		{name: "as the model wrote it", args: `{"path":"a.txt"}`},
		// An SDK or framework that parses the arguments and writes them
		// back with its own JSON writer sends the same call.
		{name: "written again as the same JSON", args: `{"path": "a.txt"}`},
		{name: "arguments edited", args: `{"path":"/etc/passwd"}`, rules: []string{"history_rewritten"}},
	} {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", tc.name, stream), func(t *testing.T) {
				conv := fmt.Sprintf("edited-%d-%d-%v", len(tc.rules), len(tc.args), stream)
				headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}
				msgs := `{"role":"user","content":"write a.txt"}`
				_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","n":2,"stream":%v,"messages":[%s]}`, stream, msgs))
				msgs += fmt.Sprintf(`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_B","type":"function","function":{"name":"write","arguments":%q}}]}`, tc.args) +
					`,{"role":"tool","tool_call_id":"call_B","content":"ok"}`
				_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","stream":%v,"messages":[%s]}`, stream, msgs))
				verify(t, r.log, conv)
				assert.Equal(t, tc.rules, checkRules(t, r.log, conv), "replay --check")
				var recorded []string
				for _, e := range conversationEvents(t, r.log, conv) {
					if p, ok := e.Payload.(events.FindingRecorded); ok {
						recorded = append(recorded, p.Rule)
					}
				}
				assert.Equal(t, tc.rules, recorded, "the gateway's findings")
			})
		}
	}
}

// TestAnotherChoiceThatRefusedIsNoRewrite: an app that goes on with a
// choice that is a refusal (its content null, its refusal said) sends
// that message back. The checker read other choices by their text and
// tool calls alone, so it skipped a refusal and reported the first
// choice's answer as history rewritten. Other choices are now read as
// the app's messages are, by the same reader.
func TestAnotherChoiceThatRefusedIsNoRewrite(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[`+
			`{"index":0,"message":{"role":"assistant","content":"answer A"},"finish_reason":"stop"},`+
			`{"index":1,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	for _, tc := range []struct {
		name, sent string
		rules      []string
	}{
		{name: "the refusal", sent: `{"role":"assistant","content":null,"refusal":"I can't help with that."}`},
		{name: "another refusal", sent: `{"role":"assistant","content":null,"refusal":"No."}`, rules: []string{"history_rewritten"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "refused-" + strings.ReplaceAll(tc.name, " ", "-")
			headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}
			msgs := `{"role":"user","content":"hi"}`
			_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, `{"model":"m","n":2,"messages":[`+msgs+`]}`)
			msgs += `,` + tc.sent + `,{"role":"user","content":"please"}`
			_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, `{"model":"m","messages":[`+msgs+`]}`)
			verify(t, r.log, conv)
			assert.Equal(t, tc.rules, checkRules(t, r.log, conv), "replay --check")
		})
	}
}
