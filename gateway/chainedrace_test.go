package gateway_test

import (
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestChainedStepAfterTheConversationWentOn: a chained tool loop's step
// (previous_response_id naming the turn's response, the earlier step's
// items sent again) threaded against a state of its conversation that went
// on before it was recorded: another gateway recorded a sibling step
// (the same loop's step with another tool output) in between, so this
// gateway's Turn was stale. The step's re-sent items were then appended
// again, the conversation holding the user's question and the model's
// tool call twice. The step forks the conversation at the state it
// continues instead, each block once.
func TestChainedStepAfterTheConversationWentOn(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newScriptedResponses(t, append(vercelChainAnswers[:3:3],
		`{"id":"resp_4","object":"response","created_at":1,"status":"completed","model":"gpt-4.1-mini","output":[{"type":"message","id":"msg_4","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Rainy.","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`)...)
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	call := func(gw string, body string) string {
		t.Helper()
		resp, _ := postOK(t, gw+"/v1/responses", map[string]string{"Turnlog-Token": token}, body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	conv := call(a.URL, vercelChainHello)
	require.Equal(t, conv, call(a.URL, vercelChainWeather))
	// Gateway b records the loop's step; gateway a, whose Turn of the
	// conversation ends at the tool call, records a sibling step.
	require.Equal(t, conv, call(b.URL, vercelChainToolStep))
	sibling := call(a.URL, strings.Replace(vercelChainToolStep, "sunny in Paris", "rainy in Paris", 1))

	l, err := eventlog.Open(t.Context(), s.Conn)
	require.NoError(t, err)
	for _, c := range []string{conv, sibling} {
		turn, err := l.Load(t.Context(), c)
		require.NoError(t, err)
		seen := map[string]string{}
		for _, b := range turn.Blocks {
			if b.Kind != events.KindUser && b.Kind != events.KindToolCall {
				continue
			}
			k := string(b.Kind) + " " + b.Text + b.ToolName + b.Arguments
			assert.Empty(t, seen[k], "conversation %s holds %q twice (blocks %s and %s)", c, k, seen[k], b.ID)
			seen[k] = b.ID
		}
		verify(t, l, c)
	}
	require.NotEqual(t, conv, sibling)
	start, ok := conversationEvents(t, l, sibling)[0].Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, conv, start.ForkedFrom, "the sibling step forks the conversation at the state it sends again")
	turn, err := l.Load(t.Context(), sibling)
	require.NoError(t, err)
	var got []string
	for _, b := range turn.Blocks {
		got = append(got, string(b.Kind)+" "+b.Text)
	}
	assert.Equal(t, []string{"system Be brief.", "user hello", "llm_text Hi.", "system Be brief.", "user what is the weather?", "tool_call ",
		"tool_result rainy in Paris", "llm_text Rainy."}, got)
	assert.Empty(t, checkRules(t, l, sibling), "no finding against an app that rewrote nothing")
}

// TestConcurrentChainedSteps: sibling steps of a chained tool loop made at
// the same moment, on one gateway and across two: whichever is recorded
// first continues the conversation, each other one forks it (at the state
// it sends again, or at the response it names when it was threaded after
// the first was recorded), and no conversation holds a block twice.
func TestConcurrentChainedSteps(t *testing.T) {
	const n = 6
	answers := vercelChainAnswers[:2:2]
	for range n {
		answers = append(answers, vercelChainAnswers[2])
	}
	s := natstest.Start(t, natstest.WithAuth())
	up := newScriptedResponses(t, answers...)
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	call := func(gw string, body string) string {
		t.Helper()
		resp, _ := postOK(t, gw+"/v1/responses", map[string]string{"Turnlog-Token": token}, body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	conv := call(a.URL, vercelChainHello)
	require.Equal(t, conv, call(a.URL, vercelChainWeather))
	convs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		gw := a
		if i%2 == 1 {
			gw = b
		}
		wg.Go(func() {
			convs[i] = call(gw.URL, strings.Replace(vercelChainToolStep, "sunny in Paris", "output "+strconv.Itoa(i), 1))
		})
	}
	wg.Wait()

	l, err := eventlog.Open(t.Context(), s.Conn)
	require.NoError(t, err)
	continued := 0
	for _, c := range convs {
		if c == conv {
			continued++
		}
	}
	assert.LessOrEqual(t, continued, 1, "one step at most continues the conversation: %v", convs)
	for _, c := range append([]string{conv}, convs...) {
		turn, err := l.Load(t.Context(), c)
		require.NoError(t, err)
		seen := map[string]bool{}
		for _, b := range turn.Blocks {
			k := string(b.Kind) + " " + b.Text + b.ToolName + b.Arguments
			if b.Kind == events.KindUser || b.Kind == events.KindToolCall || b.Kind == events.KindToolResult {
				assert.False(t, seen[k], "conversation %s holds %q twice", c, k)
			}
			seen[k] = true
		}
		verify(t, l, c)
	}
}
