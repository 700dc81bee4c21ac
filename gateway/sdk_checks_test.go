package gateway_test

import (
	"fmt"
	"io"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/providertest"
	"github.com/turnlog/turnlog/replay"
)

// recordedFindings returns the finding.recorded events of a conversation
// and, for each, the number of the model call it is about.
func recordedFindings(t *testing.T, r *rig, conv string) (rules []string, atCall []int) {
	t.Helper()
	call := map[string]int{}
	for _, e := range conversationEvents(t, r.log, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			call[p.InferenceID] = len(call) + 1
		case events.FindingRecorded:
			rules = append(rules, p.Rule)
			atCall = append(atCall, call[p.InferenceID])
		}
	}
	return rules, atCall
}

// scrape returns the gateway's metrics as Prometheus would read them.
func scrape(t *testing.T, m *gateway.Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}

func TestSDKFlattenedHistoryIsADuplicateSystemPrompt(t *testing.T) {
	up := newChatUpstream(t, "sk-provider-secret")
	m := gateway.NewMetrics()
	r := newRig(t, up.URL, "", managed, func(c *gateway.Config) { c.Metrics = m })
	res := runSDK(t, "chat_flattened.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	require.Len(t, res.Conversations, 2)
	conv := res.Conversations[0]
	require.Equal(t, conv, res.Conversations[1], "the second call continues the first")
	verify(t, r.log, conv)

	rules, atCall := recordedFindings(t, r, conv)
	require.Contains(t, rules, "duplicate_system_prompt", "recorded as the call was")
	for i, rule := range rules {
		assert.Equal(t, 2, atCall[i], "%s is about call 2", rule)
	}
	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	var checkRules []string
	var checkCalls []int
	for _, f := range checked.Findings {
		checkRules, checkCalls = append(checkRules, string(f.Rule)), append(checkCalls, f.Call)
	}
	assert.Equal(t, checkRules, rules, "replay --check finds what was recorded")
	assert.Equal(t, checkCalls, atCall)
	n := 0
	for _, rule := range rules {
		if rule == "duplicate_system_prompt" {
			n++
		}
	}
	assert.Contains(t, scrape(t, m), fmt.Sprintf(`turnlog_findings_total{rule="duplicate_system_prompt"} %d`, n))
}

func TestSDKDroppedFollowerIsReasoningWithoutFollower(t *testing.T) {
	up := providertest.NewResponses(t, toolThenText)
	m := gateway.NewMetrics()
	r := newRig(t, up.URL, "", managed, func(c *gateway.Config) { c.Metrics = m })
	res := runSDK(t, "responses_dropped_follower.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token, "CONVERSATION=dropped")
	require.Len(t, res.Conversations, 2)
	_, _, failed := inferences(t, r, "dropped")
	require.Len(t, failed, 1, "the provider refused the second call")
	assert.Contains(t, failed[0], "without its required following item")

	rules, atCall := recordedFindings(t, r, "dropped")
	require.Contains(t, rules, "reasoning_without_follower")
	for i := range rules {
		assert.Equal(t, 2, atCall[i])
	}
	assert.Contains(t, scrape(t, m), `turnlog_findings_total{rule="reasoning_without_follower"} 1`)
	metrics := scrape(t, m)
	assert.Contains(t, metrics, `turnlog_gateway_calls_total{api="responses",outcome="failed"} 1`)
	assert.Contains(t, metrics, `turnlog_gateway_calls_total{api="responses",outcome="finished"} 1`)
	assert.Contains(t, metrics, "turnlog_gateway_added_seconds_count 2")
}
