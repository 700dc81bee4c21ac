package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// callsOf fetches a page of GET /conversations/{id}/calls.
func callsOf(t *testing.T, ts *httptest.Server, path, query string) replay.CallsPage {
	t.Helper()
	var page replay.CallsPage
	require.Equal(t, http.StatusOK, getJSON(t, ts, path+query, &page), query)
	return page
}

func TestCallsOfAConversation(t *testing.T) {
	ts, l := startChatAPI(t)
	const conv = "calls-1"
	chat(t, ts, l, conv, "hello")                            // call 1
	chat(t, ts, l, conv, "count the words in one two three") // calls 2 (tool call) and 3
	status, _, _ := call(t, ts, "PUT", "/conversations/"+conv+"/prompt", "Bearer "+token, `{"text": "You answer in French.", "by": "ada"}`)
	require.Equal(t, http.StatusOK, status)
	chat(t, ts, l, conv, "hello again") // call 4, after the operator's new prompt
	url := "/conversations/" + conv + "/calls"

	page := callsOf(t, ts, url, "")
	require.Len(t, page.Calls, 4)
	assert.Equal(t, conv, page.Conversation)
	assert.Equal(t, 4, page.Total)
	assert.Zero(t, page.Next, "one page holds them all")

	// Each call is where the timeline says its inference.started is.
	var tl struct {
		Events []struct {
			N         int
			Time      time.Time
			Inference *struct {
				Index     int
				InputHash string `json:"input_hash"`
			}
		}
	}
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations/"+conv+"/timeline", &tl))
	var started []int
	for _, e := range tl.Events {
		if e.Inference != nil {
			started = append(started, e.N)
			c := page.Calls[e.Inference.Index-1]
			assert.Equal(t, e.Inference.InputHash, c.InputHash)
			assert.Equal(t, e.Time, c.Time)
			assert.True(t, c.Verified, "call %d: the input re-projected from the log hashes to what was recorded", c.Call)
		}
	}
	for i, c := range page.Calls {
		assert.Equal(t, i+1, c.Call)
		assert.Equal(t, started[i], c.N)
		assert.Equal(t, replay.CallFinished, c.Status)
		assert.NotEmpty(t, c.Model)
		require.NotNil(t, c.LatencyMS, "call %d", c.Call)
		require.NotNil(t, c.Usage, "call %d: the scripted engine reports tokens", c.Call)
		assert.Positive(t, c.Usage.InputTokens)
	}

	// The first call has nothing before it.
	assert.Nil(t, page.Calls[0].SincePrevious)
	assert.Zero(t, page.Calls[0].Previous)
	assert.Equal(t, "You said: hello", page.Calls[0].Output[len(page.Calls[0].Output)-1].Text)

	// Call 2 got the first answer and the new question: added blocks, in
	// the diff-turns form.
	c2 := page.Calls[1]
	assert.Equal(t, 1, c2.Previous)
	require.NotNil(t, c2.SincePrevious)
	assert.Equal(t, []string{"added reasoning", "added llm_text", "added user"}, changes(c2.SincePrevious))
	assert.Nil(t, c2.SincePrevious.SystemPrompt, "the system prompt did not change")
	assert.Equal(t, []string{"reasoning", "tool_call"}, kinds(c2.Output), "its output is the tool call")

	// Call 3 (the same request) got the tool call and its result.
	assert.Equal(t, []string{"added reasoning", "added tool_call", "added tool_result"}, changes(page.Calls[2].SincePrevious))
	assert.Equal(t, `There are 3 words in "one two three".`, page.Calls[2].Output[len(page.Calls[2].Output)-1].Text)

	// Call 4 runs on the operator's prompt: the change is called out.
	c4 := page.Calls[3].SincePrevious
	require.NotNil(t, c4)
	require.NotNil(t, c4.SystemPrompt, "a changed system prompt is reported apart")
	assert.Contains(t, c4.SystemPrompt.Fields, "text")
	assert.Contains(t, c4.SystemPrompt.TextDiff, "+You answer in French.")

	// Pages: from and limit, and next to follow.
	first := callsOf(t, ts, url, "?limit=3")
	assert.Equal(t, []int{1, 2, 3}, numbers(first))
	assert.Equal(t, 4, first.Next)
	assert.Equal(t, 4, first.Total)
	rest := callsOf(t, ts, url, fmt.Sprintf("?from=%d&limit=3", first.Next))
	assert.Equal(t, []int{4}, numbers(rest))
	assert.Zero(t, rest.Next)
	assert.Equal(t, page.Calls[3], rest.Calls[0], "a call on a later page is described as on the first, its diff included")
	mid := callsOf(t, ts, url, "?from=2&limit=1")
	assert.Equal(t, page.Calls[1], mid.Calls[0])
	assert.Equal(t, 3, mid.Next)
	past := callsOf(t, ts, url, "?from=9")
	assert.Empty(t, past.Calls)
	assert.Equal(t, 4, past.Total)
}

// TestCallsCarryTheirFindings: a conversation that got a second system
// prompt between two requests (an operator's tool appended it); each call
// of GET /conversations/{id}/calls carries the findings replay --check
// reports for it, numbered alike, on any page.
func TestCallsCarryTheirFindings(t *testing.T) {
	ts, l := startChatAPI(t)
	const conv = "calls-findings"
	chat(t, ts, l, conv, "hello") // call 1
	turn, err := l.Load(context.Background(), conv)
	require.NoError(t, err)
	appendAt(t, l, conv, time.Now(), events.SystemPromptSet{BlockID: "second-prompt", Text: "Also be brief.", Index: len(turn.Blocks), Trust: events.Trusted})
	chat(t, ts, l, conv, "hello again")                  // call 2
	chat(t, ts, l, conv, "count the words in red green") // calls 3 and 4
	url := "/conversations/" + conv + "/calls"

	checked, err := replay.Check(context.Background(), l, conv)
	require.NoError(t, err)
	require.NotEmpty(t, checked.Findings, "the conversation breaks a rule")
	page := callsOf(t, ts, url, "")
	require.Len(t, page.Calls, 4)
	var all []check.Finding
	for _, c := range page.Calls {
		require.NotNil(t, c.Findings, "call %d: findings is a list, never null", c.Call)
		for _, f := range c.Findings {
			assert.Equal(t, c.Call, f.Call, "a call carries its own findings")
			assert.Equal(t, c.N, f.N)
		}
		all = append(all, c.Findings...)
	}
	assert.Equal(t, checked.Findings, all, "the calls carry what replay --check reports, in the same order")
	assert.Empty(t, page.Calls[0].Findings)
	require.NotEmpty(t, page.Calls[1].Findings, "the call that first got the second prompt")
	assert.Equal(t, check.RuleDuplicateSystemPrompt, page.Calls[1].Findings[0].Rule)
	assert.Contains(t, page.Calls[1].Findings[0].Blocks, "second-prompt")
	assert.Empty(t, page.Calls[2].Findings, "a fault a later input still carries is reported once")

	// A page that starts after the fault reports it where it was found
	// only; a page holding that call alone carries it.
	assert.Equal(t, page.Calls[1].Findings, callsOf(t, ts, url, "?from=2&limit=1").Calls[0].Findings)
	assert.Empty(t, callsOf(t, ts, url, "?from=3").Calls[0].Findings)

	// In the JSON, "findings" is always there.
	_, body, _ := call(t, ts, "GET", url+"?limit=1", "Bearer "+token, "")
	first := body["calls"].([]any)[0].(map[string]any)
	assert.Equal(t, []any{}, first["findings"])

	// Every page counts the findings of the whole conversation and names
	// the calls that have them, loaded or not: a page without them says
	// where they are.
	var at []any
	for _, f := range checked.Findings {
		if len(at) == 0 || at[len(at)-1] != float64(f.Call) {
			at = append(at, float64(f.Call))
		}
	}
	for _, query := range []string{"", "?limit=1", "?from=3", "?from=9"} {
		_, body, _ := call(t, ts, "GET", url+query, "Bearer "+token, "")
		assert.Equal(t, float64(len(checked.Findings)), body["findings_total"], "findings_total of %q", query)
		assert.Equal(t, at, body["finding_calls"], "finding_calls of %q", query)
	}
}

// TestCallsWithoutFindings: a conversation without
// findings answers a count of 0 and an empty list, never null.
func TestCallsWithoutFindings(t *testing.T) {
	ts, l := startChatAPI(t)
	const conv = "calls-clean"
	chat(t, ts, l, conv, "hello")
	_, body, _ := call(t, ts, "GET", "/conversations/"+conv+"/calls", "Bearer "+token, "")
	assert.Equal(t, float64(0), body["findings_total"])
	assert.Equal(t, []any{}, body["finding_calls"])
}

// TestCallsShowAFailedCallsPartialOutput: a call that failed after it
// delivered part of its answer (a stream's error event) carries that
// output as "partial", its "output" empty: the conversation did not go on
// from it.
func TestCallsShowAFailedCallsPartialOutput(t *testing.T) {
	ts, l := startChatAPI(t)
	const conv = "calls-partial"
	at := time.Now()
	appendAt(t, l, conv, at, events.UserAppended{BlockID: "u1", Text: "hi"})
	turn, err := l.Load(context.Background(), conv)
	require.NoError(t, err)
	appendAt(t, l, conv, at, events.InferenceStarted{InferenceID: "i1", Model: "m", InputHash: projector.Hash(turn), Blocks: 1})
	appendAt(t, l, conv, at, events.InferenceFailed{InferenceID: "i1", Error: "overloaded_error: Overloaded", Transient: true, Duration: time.Second,
		Partial: []events.Block{{ID: "p1", Kind: events.KindLLMText, Text: "Hello wor"}}})

	_, body, _ := call(t, ts, "GET", "/conversations/"+conv+"/calls", "Bearer "+token, "")
	calls := body["calls"].([]any)
	require.Len(t, calls, 1)
	c := calls[0].(map[string]any)
	assert.Equal(t, "failed", c["status"])
	assert.Equal(t, []any{}, c["output"])
	assert.Equal(t, []any{map[string]any{"id": "p1", "kind": "llm_text", "text": "Hello wor"}}, c["partial"])
}

func TestCallsRefusals(t *testing.T) {
	ts, l := startChatAPI(t)
	chat(t, ts, l, "calls-2", "hello")
	for _, tc := range []struct {
		name, path, auth string
		status           int
		says             string
	}{
		{"no token", "/conversations/calls-2/calls", "", http.StatusUnauthorized, "requires a token"},
		{"wrong token", "/conversations/calls-2/calls", "Bearer nope", http.StatusUnauthorized, "wrong"},
		{"limit 0", "/conversations/calls-2/calls?limit=0", "Bearer " + token, http.StatusBadRequest, "from 1 to 1000"},
		{"limit too large", "/conversations/calls-2/calls?limit=1001", "Bearer " + token, http.StatusBadRequest, "from 1 to 1000"},
		{"from not a number", "/conversations/calls-2/calls?from=x", "Bearer " + token, http.StatusBadRequest, "model call number"},
		{"from 0", "/conversations/calls-2/calls?from=0", "Bearer " + token, http.StatusBadRequest, "model call number"},
		{"unknown conversation", "/conversations/nobody/calls", "Bearer " + token, http.StatusNotFound, "has no events"},
		{"bad ID", "/conversations/a.b/calls", "Bearer " + token, http.StatusBadRequest, "conversation ID"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := call(t, ts, "GET", tc.path, tc.auth, "")
			assert.Equal(t, tc.status, status)
			assert.Contains(t, body["error"], tc.says)
			assert.NotContains(t, body, "calls")
		})
	}
}

func changes(r *replay.Result) []string {
	out := []string{}
	for _, c := range r.Changes {
		out = append(out, string(c.Op)+" "+string(c.Kind))
	}
	return out
}

func kinds(bs []events.Block) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, string(b.Kind))
	}
	return out
}

func numbers(p replay.CallsPage) []int {
	out := []int{}
	for _, c := range p.Calls {
		out = append(out, c.Call)
	}
	return out
}
