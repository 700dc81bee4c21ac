package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// TestCallInFlightDuringEraseIsNotWrittenBack: a conversation erased while
// one of its calls waits for the upstream stays erased. The call's input
// was recorded before the erasure and went with it; its outcome must not
// bring the conversation back when the upstream answers. The app gets its
// answer (the provider gave it), and the call is counted as erased.
func TestCallInFlightDuringEraseIsNotWrittenBack(t *testing.T) {
	up, reached, release := holdingUpstream(t, "PIN")
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

// eraseBeforeInput is the log with an erasure at the worst moment for a
// call: after the gateway threaded the call and took its conversation's
// Turn, before the call's input is appended. It erases the conversation
// the first time an append carries a user message with marker.
type eraseBeforeInput struct {
	*eventlog.Log
	marker string
	once   sync.Once
	erased chan string
}

func (e *eraseBeforeInput) Append(ctx context.Context, conv string, seq uint64, evs ...events.Event) (uint64, error) {
	for _, ev := range evs {
		if u, ok := ev.Payload.(events.UserAppended); ok && strings.Contains(u.Text, e.marker) {
			e.once.Do(func() {
				if _, err := e.Log.Erase(ctx, conv); err == nil {
					e.erased <- conv
				}
			})
		}
	}
	return e.Log.Append(ctx, conv, seq, evs...)
}

// TestCallRacingEraseBeforeItsInputIsNotWrittenBack: a call made before
// its conversation was erased, whose input was not yet appended when the
// erasure came (it was threaded and its Turn taken), is part of what was
// erased. Its append is refused (the log moved); it must not then record
// the erased history it re-sent, neither under the erased ID (named
// conversation) nor as a new conversation (threaded by content). A call
// made after the erasure starts anew.
func TestCallRacingEraseBeforeItsInputIsNotWrittenBack(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("noted"))
	for _, named := range []bool{true, false} {
		t.Run(fmt.Sprintf("named=%v", named), func(t *testing.T) {
			m := gateway.NewMetrics()
			var wrapped *eraseBeforeInput
			r := newRig(t, up.URL, "", func(c *gateway.Config) {
				l := c.Log.(*eventlog.Log)
				threads, err := l.Threads(t.Context())
				require.NoError(t, err)
				wrapped = &eraseBeforeInput{Log: l, marker: "PIN", erased: make(chan string, 1)}
				c.Log, c.Threads, c.Metrics = wrapped, threads, m
			})
			headers := map[string]string{"Turnlog-Token": token}
			if named {
				headers["Turnlog-Conversation"] = "secret"
			}
			first := `{"role":"system","content":"be brief"},{"role":"user","content":"my account number is 42"}`
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", headers, `{"model":"gpt-test","messages":[`+first+`]}`)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			conv := resp.Header.Get("Turnlog-Conversation")

			second := `{"model":"gpt-test","messages":[` + first + `,{"role":"assistant","content":"noted"},{"role":"user","content":"and my PIN is 1234"}]}`
			resp, body = post(t, r.gw.URL+"/v1/chat/completions", headers, second)
			require.Equal(t, 200, resp.StatusCode, "the app gets the answer the provider gave: %s", body)
			require.Equal(t, conv, <-wrapped.erased, "the erasure came between the call's threading and its input")

			convs, err := r.log.Conversations(t.Context())
			require.NoError(t, err)
			for _, c := range convs {
				for _, text := range userTexts(t, r, c.ID) {
					assert.NotContains(t, text, "account number", "conversation %s holds what was erased", c.ID)
				}
			}
			assert.Contains(t, scrape(t, m), `turnlog_gateway_calls_total{api="chat.completions",outcome="erased"} 1`)

			// Made after the erasure, the same call is recorded: anew
			// under the name it gives, else as a conversation of its own.
			resp, body = post(t, r.gw.URL+"/v1/chat/completions", headers, second)
			require.Equal(t, 200, resp.StatusCode, "%s", body)
			again := resp.Header.Get("Turnlog-Conversation")
			if named {
				assert.Equal(t, "secret", again)
			} else {
				assert.NotEqual(t, conv, again, "an inferred call does not bring back the erased conversation's ID")
			}
			assert.Equal(t, []string{"my account number is 42", "and my PIN is 1234"}, userTexts(t, r, again))
			verify(t, r.log, again)
		})
	}
}

// gatedTransport holds a request whose body holds marker until gate is
// closed, before it goes upstream: the gateway reads and records a call
// once it is on its way, so the call is made (and timed) now and recorded
// later.
type gatedTransport struct {
	next   http.RoundTripper
	marker string
	gate   chan struct{}
}

func (g gatedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(req.Body)
	req.Body = io.NopCloser(bytes.NewReader(body))
	if bytes.Contains(body, []byte(g.marker)) {
		<-g.gate
	}
	return g.next.RoundTrip(req)
}

// TestCallMadeBeforeEraseIsNotWrittenIntoTheConversationAfter: a call
// made before its conversation was erased, recorded only once another
// call, made after, had started the conversation anew under its name,
// was written into it (its history "removing" the new call's blocks). A
// call belongs to what was erased whatever the conversation holds when
// it is recorded: it is not recorded, and is counted as erased.
func TestCallMadeBeforeEraseIsNotWrittenIntoTheConversationAfter(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("noted"))
	gate := make(chan struct{})
	logs := &syncbuf.Buffer{}
	m := gateway.NewMetrics()
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		threads, err := c.Log.(*eventlog.Log).Threads(t.Context())
		require.NoError(t, err)
		c.Threads, c.Metrics = threads, m
		c.Transport = gatedTransport{next: c.Transport, marker: "made before", gate: gate}
		c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	runGateway(t, r)
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	t.Cleanup(release) // before the gateway's server closes, which waits for the held call
	h := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "erz"}
	call := func(text string) int {
		resp, _ := post(t, r.gw.URL+"/v1/chat/completions", h, `{"model":"gpt-test","messages":[{"role":"user","content":"`+text+`"}]}`)
		return resp.StatusCode
	}
	require.Equal(t, 200, call("my secret"))
	late := make(chan int, 1)
	go func() { late <- call("made before the erasure") }()
	time.Sleep(100 * time.Millisecond) // the call is made, held before it goes upstream
	_, err := r.log.Erase(t.Context(), "erz")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "erased conversation") }, 10*time.Second, 10*time.Millisecond,
		"the gateway heard of the erasure")
	require.Equal(t, 200, call("made after the erasure"), "a call made after starts the conversation anew")
	release()
	require.Equal(t, 200, <-late, "the app gets its answer all the same")

	assert.Equal(t, []string{"made after the erasure"}, userTexts(t, r, "erz"), "only what was made after the erasure")
	assert.Contains(t, scrape(t, m), `turnlog_gateway_calls_total{api="chat.completions",outcome="erased"} 1`)
	verify(t, r.log, "erz")
	assert.Empty(t, checkRules(t, r.log, "erz"))
}
