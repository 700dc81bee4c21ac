package gateway_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// The findings a gateway records as it checks each call are the ones
// replay --check finds from scratch, call for call: while the
// conversation's checker is kept between its calls, after two calls of it
// at once (one of them conflicts, and its checker is let go and rebuilt
// from the log), and on another gateway, which rebuilds it from the log.
func TestRecordedFindingsAreReplayChecks(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	const conv = "audited"
	// call sends msgs through gw and returns the answer's message, as a
	// client puts it in its history.
	call := func(gw string, msgs string) string {
		t.Helper()
		resp, body := post(t, gw+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv},
			`{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		var r struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.Len(t, r.Choices, 1)
		return string(r.Choices[0].Message)
	}
	const sys = `{"role":"system","content":"be brief"}`
	user := func(s string) string { return `{"role":"user","content":"` + s + `"}` }
	// Every answer to a user message is a tool call (call_<n>): the
	// history answers it before the next user message.
	tool := func(n string) string { return `{"role":"tool","tool_call_id":"call_` + n + `","content":"sunny"}` }

	h := sys + "," + user("one")
	h += "," + call(a.URL, h) + "," + tool("1")
	// The system prompt sent again in the middle: duplicate_system_prompt
	// at call 2, and not again at call 3, whose input still has it.
	h += "," + sys + "," + user("two")
	h += "," + call(a.URL, h) + "," + tool("2")
	h += "," + user("three")
	h += "," + call(a.URL, h) + "," + tool("3")
	// Two calls at once: one appends first, the other conflicts.
	var wg sync.WaitGroup
	for _, q := range []string{"four", "five"} {
		wg.Go(func() { call(a.URL, h+","+user(q)) })
	}
	wg.Wait()
	// On the other gateway, whose checker for the conversation is built
	// from the log, and back on the first.
	last := h + "," + user("six")
	last += "," + call(b.URL, last) + "," + tool("6")
	call(a.URL, last+","+sys+","+user("seven"))

	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	var rules []string
	var atCall []int
	calls := map[string]int{}
	for _, e := range conversationEvents(t, l, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			calls[p.InferenceID] = len(calls) + 1
		case events.FindingRecorded:
			rules, atCall = append(rules, p.Rule), append(atCall, calls[p.InferenceID])
		}
	}
	require.Len(t, calls, 7)
	require.Contains(t, rules, "duplicate_system_prompt")
	checked, err := replay.Check(t.Context(), l, conv)
	require.NoError(t, err)
	var checkRules []string
	var checkCalls []int
	for _, f := range checked.Findings {
		checkRules, checkCalls = append(checkRules, string(f.Rule)), append(checkCalls, f.Call)
	}
	assert.Equal(t, checkRules, rules, "replay --check finds what the gateways recorded")
	assert.Equal(t, checkCalls, atCall)
	assert.Equal(t, 2, atCall[0], "the duplicate is found at the call that first sent it")
}
