package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
)

// TestCallInFlightDuringEraseIsNotWrittenBack: a conversation erased while
// one of its calls waits for the upstream stays erased. The call's input
// was recorded before the erasure and went with it; its outcome must not
// bring the conversation back when the upstream answers. The app gets its
// answer (the provider gave it), and the call is counted as erased.
func TestCallInFlightDuringEraseIsNotWrittenBack(t *testing.T) {
	reached, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte("PIN")) {
			close(reached)
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"noted"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(up.Close)
	m := gateway.NewMetrics()
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.Metrics = m })
	named := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "secret"}
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", named, fmt.Sprintf(chatBody, "my account number is 42"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)

	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, r.gw.URL+"/v1/chat/completions", named,
			`{"model":"gpt-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"my account number is 42"},{"role":"assistant","content":"noted"},{"role":"user","content":"and my PIN is 1234"}]}`)
		done <- resp.StatusCode
	}()
	<-reached
	require.Eventually(t, func() bool { return len(userTexts(t, r, "secret")) == 2 }, 10*time.Second, 10*time.Millisecond,
		"the call's input is recorded while the upstream works")
	_, err := r.log.Erase(t.Context(), "secret")
	require.NoError(t, err)
	close(release)
	assert.Equal(t, 200, <-done, "the app gets the answer the provider gave")

	assert.Empty(t, userTexts(t, r, "secret"), "nothing of the erased conversation is written back")
	assert.Contains(t, scrape(t, m), `turnlog_gateway_calls_total{api="chat.completions",outcome="erased"} 1`)

	// The ID can be used again: a call after the erasure starts anew.
	resp, body = post(t, r.gw.URL+"/v1/chat/completions", named, fmt.Sprintf(chatBody, "a new start"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Equal(t, []string{"a new start"}, userTexts(t, r, "secret"))
	verify(t, r.log, "secret")
}

// userTexts lists the text of each user message stored in conv.
func userTexts(t *testing.T, r *rig, conv string) []string {
	t.Helper()
	var out []string
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.UserAppended); ok {
			out = append(out, p.Text)
		}
	}
	return out
}
