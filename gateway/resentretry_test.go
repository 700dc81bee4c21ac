package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetryAfterUnreachableUpstreamIsRecordedOnce: a call continuing the
// latest response (previous_response_id) that the upstream never answered
// (its connection closed: the gateway answers 502) keeps its items in the
// conversation, and the app's retry (the OpenAI SDKs retry a 502 by
// themselves) sends them again against the same response. The retry was
// taken as new items after them, so the history held the turn's messages
// twice, though the provider read them once (the failed call's are in no
// response); and the tool loop's next step, which sends them again once,
// no longer matched the conversation and forked it. The retry's items are
// the failed call's, sent again: one conversation, each item once.
func TestRetryAfterUnreachableUpstreamIsRecordedOnce(t *testing.T) {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		i := int(n.Add(1))
		if i == 2 {
			// The weather question never reaches the provider.
			c, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				c.Close()
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, vercelChainAnswers[map[int]int{1: 0, 3: 1, 4: 2}[i]])
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "", managed)
	var convs []string
	for i, body := range []string{vercelChainHello, vercelChainWeather, vercelChainWeather, vercelChainToolStep} {
		resp, out := post(t, r.gw.URL+"/v1/responses", map[string]string{"Authorization": "Bearer " + token}, body)
		want := 200
		if i == 1 {
			want = 502
		}
		require.Equal(t, want, resp.StatusCode, "call %d: %s", i+1, out)
		convs = append(convs, resp.Header.Get("Turnlog-Conversation"))
	}
	conv := convs[0]
	require.Equal(t, []string{conv, conv, conv, conv}, convs, "one chat, one conversation")
	assert.Equal(t, []string{"Be brief.", "hello", "Hi.", "Be brief.", "what is the weather?", "", "sunny in Paris", "Sunny."},
		blockTexts(t, r.log, conv), "the history the provider held, each item once")
	v := verify(t, r.log, conv)
	assert.Equal(t, 4, v.Inferences)
	for _, rule := range checkRules(t, r.log, conv) {
		assert.Equal(t, "duplicate_system_prompt", rule)
	}
}
