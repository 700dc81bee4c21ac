package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestAnotherChoiceMixedWithTheFirstIsRewrite: another choice stands in
// for the first only in its place: an app that sends back the second
// choice's text with the first choice's tool call has the model read a
// turn it never wrote (its text from one answer, its call from another).
// The allowance excused the first choice's text, missing, though its
// call was still there, and the mix passed unreported.
func TestAnotherChoiceMixedWithTheFirstIsRewrite(t *testing.T) {
	const call = `{"id":"call_A","type":"function","function":{"name":"write","arguments":"{\"path\":\"a.txt\"}"}}`
	up := twoChoicesUpstream(t,
		`{"index":0,"message":{"role":"assistant","content":"I will write a.txt.","tool_calls":[`+call+`]},"finish_reason":"tool_calls"}`,
		`{"index":1,"message":{"role":"assistant","content":"I will not write anything."},"finish_reason":"stop"}`)
	r := newRig(t, up.URL, "")
	for _, tc := range []struct {
		name, sent string
		rules      []string
	}{
		{name: "the first choice", sent: `{"role":"assistant","content":"I will write a.txt.","tool_calls":[` + call + `]},{"role":"tool","tool_call_id":"call_A","content":"ok"}`},
		{name: "the second choice", sent: `{"role":"assistant","content":"I will not write anything."}`},
		{name: "the second's text with the first's call", sent: `{"role":"assistant","content":"I will not write anything.","tool_calls":[` + call + `]},{"role":"tool","tool_call_id":"call_A","content":"ok"}`,
			rules: []string{"history_rewritten"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := fmt.Sprintf("mixed-%d-%d", len(tc.rules), len(tc.sent))
			assert.Equal(t, tc.rules, goOnWithAChoice(t, r, conv, "write a.txt", tc.sent), "replay --check")
		})
	}
}

// TestAnotherChoiceThatBeginsAsTheFirstIsTaken: choices sampled from one
// prompt often begin with the same text and call different tools ("Let
// me look." then search(a), or search(b)). An app that goes on with the
// second sends back that text and the second's call; threading keeps
// the first choice's text block for it (same content), and the second's
// call is new. That is the second choice whole, not a rewrite; the
// second's call without its text is still one.
func TestAnotherChoiceThatBeginsAsTheFirstIsTaken(t *testing.T) {
	const callA = `{"id":"call_A","type":"function","function":{"name":"search","arguments":"{\"q\":\"a\"}"}}`
	const callB = `{"id":"call_B","type":"function","function":{"name":"search","arguments":"{\"q\":\"b\"}"}}`
	up := twoChoicesUpstream(t,
		`{"index":0,"message":{"role":"assistant","content":"Let me look.","tool_calls":[`+callA+`]},"finish_reason":"tool_calls"}`,
		`{"index":1,"message":{"role":"assistant","content":"Let me look.","tool_calls":[`+callB+`]},"finish_reason":"tool_calls"}`)
	r := newRig(t, up.URL, "")
	for i, tc := range []struct {
		name, sent string
		rules      []string
	}{
		{name: "the first choice", sent: `{"role":"assistant","content":"Let me look.","tool_calls":[` + callA + `]},{"role":"tool","tool_call_id":"call_A","content":"ok"}`},
		{name: "the second choice", sent: `{"role":"assistant","content":"Let me look.","tool_calls":[` + callB + `]},{"role":"tool","tool_call_id":"call_B","content":"ok"}`},
		{name: "the second's call without its text", sent: `{"role":"assistant","content":null,"tool_calls":[` + callB + `]},{"role":"tool","tool_call_id":"call_B","content":"ok"}`,
			rules: []string{"history_rewritten", "history_rewritten"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.rules, goOnWithAChoice(t, r, fmt.Sprintf("begins-%d", i), "search", tc.sent), "replay --check")
		})
	}
}

// twoChoicesUpstream answers a chat call asking for two choices ("n":2)
// with first and second (each a choice's JSON), and any other with
// "done".
func twoChoicesUpstream(t *testing.T, first, second string) *httptest.Server {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(string(b), `"n":2`) {
			io.WriteString(w, chatAnswer("done"))
			return
		}
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[`+first+`,`+second+`]}`)
	}))
	t.Cleanup(up.Close)
	return up
}

// goOnWithAChoice asks for two choices in conversation conv, then goes on
// with the messages sent (what the app keeps of the answer) and another
// user message; it verifies the conversation and returns the rules
// replay --check finds in it.
func goOnWithAChoice(t *testing.T, r *rig, conv, ask, sent string) []string {
	t.Helper()
	headers := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv}
	msgs := `{"role":"user","content":` + strconv.Quote(ask) + `}`
	_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, `{"model":"m","n":2,"messages":[`+msgs+`]}`)
	msgs += `,` + sent + `,{"role":"user","content":"go on"}`
	_, _ = postOK(t, r.gw.URL+"/v1/chat/completions", headers, `{"model":"m","messages":[`+msgs+`]}`)
	verify(t, r.log, conv)
	return checkRules(t, r.log, conv)
}
