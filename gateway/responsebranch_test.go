package gateway_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestPreviousResponseIDOfAnEarlierCallForks: a Responses API call whose
// previous_response_id names an earlier call than its conversation's
// latest (an app that regenerates from an earlier answer) branches the
// conversation there, as turnlog fork does and as threading by content
// does for the same case. It used to be appended after the latest call,
// so the conversation's history (export, diff-turns, the console) showed
// the second answer before the branch, which no model saw.
func TestPreviousResponseIDOfAnEarlierCallForks(t *testing.T) {
	up := newNumberedResponses(t)
	r := newRig(t, up.URL, "")
	call := func(input, previous string) (conv, id string) {
		t.Helper()
		return respond(t, r, map[string]any{"instructions": "be brief"}, input, previous)
	}
	main, r1 := call("first question", "")
	conv2, _ := call("second question", r1)
	require.Equal(t, main, conv2, "the latest call's response continues the conversation")
	branch, r3 := call("branch question", r1)
	require.NotEqual(t, main, branch, "an earlier call's response branches")
	conv4, _ := call("after the branch", r3)
	assert.Equal(t, branch, conv4, "the branch goes on")

	assert.Equal(t, []string{"be brief", "first question", "answer 1", "second question", "answer 2"}, blockTexts(t, r.log, main))
	assert.Equal(t, []string{"be brief", "first question", "answer 1", "branch question", "answer 3", "after the branch", "answer 4"}, blockTexts(t, r.log, branch))
	first := conversationEvents(t, r.log, branch)[0].Payload.(events.ConversationStarted)
	assert.Equal(t, main, first.ForkedFrom)
	mainEvents := conversationEvents(t, r.log, main)
	var afterCall1 int
	for i, e := range mainEvents {
		if _, ok := e.Payload.(events.InferenceFinished); ok {
			afterCall1 = i + 1
			break
		}
	}
	assert.Equal(t, afterCall1, first.ForkedAt, "forked after call 1's outcome")
	// replay says which response a call continued (its input holds the
	// new items only).
	var text strings.Builder
	for e, err := range replay.Entries(t.Context(), r.log, branch) {
		require.NoError(t, err)
		if e.Inference != nil {
			require.NoError(t, e.WriteText(&text))
		}
	}
	assert.Contains(t, text.String(), `continues response "`+r3+`"`)
	for _, conv := range []string{main, branch} {
		verify(t, r.log, conv)
		checked, err := replay.Check(t.Context(), r.log, conv)
		require.NoError(t, err)
		assert.Empty(t, checked.Findings, "%s", conv)
	}
}

// TestContinuingAnUnrecordedResponseIsNotAFault: a Responses call that
// continues a response no gateway recorded (the app's history began before
// it pointed at turnlog) sends a tool result whose call is in the
// provider's history, not in the request. replay --check reported it as
// tool_result_without_call, "not yet sent to a model".
func TestContinuingAnUnrecordedResponseIsNotAFault(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"resp_2","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"It is sunny.","annotations":[]}]}]}`)
	r := newRig(t, up.URL, "")
	resp, out := post(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token},
		`{"model":"m","previous_response_id":"resp_from_before","input":[{"type":"function_call_output","call_id":"call_abc","output":"sunny"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
	conv := resp.Header.Get("Turnlog-Conversation")
	verify(t, r.log, conv)
	assert.Empty(t, checkRules(t, r.log, conv))
}

// respond sends a Responses API call with input, continuing previous (a
// response ID, "" for none), with extra fields beside them, and returns
// the conversation it was recorded in and the response's ID.
func respond(t *testing.T, r *rig, extra map[string]any, input, previous string) (conv, id string) {
	t.Helper()
	body := map[string]any{"model": "m", "input": input}
	for k, v := range extra {
		body[k] = v
	}
	if previous != "" {
		body["previous_response_id"] = previous
	}
	b, _ := json.Marshal(body)
	resp, out := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, string(b))
	var got struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &got))
	return resp.Header.Get("Turnlog-Conversation"), got.ID
}
