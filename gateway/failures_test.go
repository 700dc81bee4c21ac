package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/replay"
)

func post(t *testing.T, url string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

// postOK is post of a call that must be answered 200.
func postOK(t *testing.T, url string, header map[string]string, body string) (*http.Response, []byte) {
	t.Helper()
	resp, out := post(t, url, header, body)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
	return resp, out
}

const chatBody = `{"model":"gpt-test","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"%s"}]}`

func managed(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" }

func inferences(t *testing.T, r *rig, conv string) (started []events.InferenceStarted, finished int, failed []string) {
	for _, e := range conversationEvents(t, r.log, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			started = append(started, p)
		case events.InferenceFinished:
			finished++
		case events.InferenceFailed:
			failed = append(failed, p.Error)
		}
	}
	return
}

func TestRefusedBeforeForwarding(t *testing.T) {
	up := newChatUpstream(t, "sk-provider-secret")
	r := newRig(t, up.URL, up.URL, managed, func(c *gateway.Config) { c.MaxBody = 1000 })
	for _, tc := range []struct {
		name   string
		path   string
		header map[string]string
		body   string
		status int
		shape  string
	}{
		{"no key", "/v1/chat/completions", nil, fmt.Sprintf(chatBody, "hi"), 401, `"code":"invalid_api_key"`},
		{"wrong key", "/v1/chat/completions", map[string]string{"Authorization": "Bearer sk-provider-secret"}, fmt.Sprintf(chatBody, "hi"), 401, `"invalid_request_error"`},
		{"wrong Turnlog-Token", "/v1/chat/completions", map[string]string{"Turnlog-Token": "nope", "Authorization": "Bearer x"}, fmt.Sprintf(chatBody, "hi"), 401, `"invalid_request_error"`},
		{"anthropic without token", "/v1/messages", map[string]string{"X-Api-Key": "sk-ant"}, `{"model":"m","max_tokens":5,"messages":[]}`, 401, `"type":"authentication_error"`},
		{"oversized", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + token}, fmt.Sprintf(chatBody, strings.Repeat("x", 2000)), 413, `"code":"request_too_large"`},
		{"unforwardable conversation ID", "/v1/chat/completions", map[string]string{"Authorization": "Bearer " + token, "Turnlog-Conversation": "a.b"}, fmt.Sprintf(chatBody, "hi"), 400, `contains '.'`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, r.gw.URL+tc.path, tc.header, tc.body)
			assert.Equal(t, tc.status, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), tc.shape)
			// An app told the provider's 401 from turnlog's by nothing (an
			// adopter probe took one for the other).
			assert.Equal(t, "gateway", resp.Header.Get(gateway.ErrorHeader), "turnlog's own answer says so")
			sent, _, _ := r.wire.snapshot()
			assert.Empty(t, sent, "nothing was forwarded")
		})
	}
	t.Run("the 401 says what was missing and where the token is", func(t *testing.T) {
		// An adopter's SDK without a key got "the API key is not turnlog's
		// token", naming auth/http.token, not where serve keeps it.
		_, body := post(t, r.gw.URL+"/v1/chat/completions", nil, fmt.Sprintf(chatBody, "hi"))
		assert.Contains(t, string(body), "no API key was sent")
		assert.Contains(t, string(body), ".turnlog/auth/http.token")
	})
}

func TestNATSDownAnswers503WithoutForwarding(t *testing.T) {
	up := newChatUpstream(t, "sk-provider-secret")
	logs := &syncbuf.Buffer{}
	r := newRig(t, up.URL, "", managed, func(c *gateway.Config) { c.Logger = slog.New(slog.NewTextHandler(logs, nil)) })
	r.srv.Conn.Close()
	for range 2 {
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer " + token}, fmt.Sprintf(chatBody, "hi"))
		assert.Equal(t, 503, resp.StatusCode)
		assert.Contains(t, string(body), "NATS")
	}
	sent, _, _ := r.wire.snapshot()
	assert.Empty(t, sent)
	// The operator reads it too, once an outage, not once a call.
	assert.Equal(t, 1, strings.Count(logs.String(), "NATS is unreachable: calls are answered 503"), "%s", logs)
}

// storedBytes returns every stored message of the event streams, data and
// headers.
func storedBytes(t *testing.T, r *rig) []byte {
	all := natstest.StoredBytes(t, r.log.JetStream(), r.log.Names().EventStreams()...)
	require.NotZero(t, len(all))
	return all
}

func TestKeysNeverStoredAndUpstreamErrorsRecorded(t *testing.T) {
	up := newChatUpstream(t, "sk-provider-secret")
	r := newRig(t, up.URL, "", managed)
	resp, _ := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Authorization": "Bearer " + token}, fmt.Sprintf(chatBody, "managed"))
	require.Equal(t, 200, resp.StatusCode)
	// Pass-through with a key the upstream refuses: the client gets the
	// upstream's own 401, and the call is recorded as failed.
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Authorization": "Bearer sk-client-wrong-key"}, fmt.Sprintf(chatBody, "pass"))
	assert.Equal(t, 401, resp.StatusCode)
	assert.Contains(t, string(body), "Incorrect API key provided")
	assert.Empty(t, resp.Header.Get(gateway.ErrorHeader), "the provider's own error: turnlog's token was good")
	conv := resp.Header.Get("Turnlog-Conversation")
	require.NotEmpty(t, conv)
	started, finished, failed := inferences(t, r, conv)
	require.Len(t, started, 1)
	assert.Zero(t, finished)
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], "upstream answered 401")
	// The upstream echoed the key; the record holds what the client got,
	// the key overwritten.
	assert.Contains(t, failed[0], "Incorrect API key provided: "+strings.Repeat("*", len("sk-client-wrong-key")), "the record says so without the key")
	verify(t, r.log, conv)

	stored := storedBytes(t, r)
	for _, secret := range []string{"sk-provider-secret", "sk-client-wrong-key", token} {
		assert.NotContains(t, string(stored), secret, "a key is in the stream's stored bytes")
	}
}

// TestEchoedKeyCutShortIsNotStored: an upstream's plain-text error with
// the key past the 200 characters a failure keeps of it was cut inside
// the key before the key was looked for, and all but its end was stored
// (found by the security re-probe).
func TestEchoedKeyCutShortIsNotStored(t *testing.T) {
	const key = "sk-proj-SECRETKEY0123456789abcdefABCDEF"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, strings.Repeat("x", 140)+" Incorrect API key provided: "+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	resp, _ := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Authorization": "Bearer " + key}, fmt.Sprintf(chatBody, "cut"))
	require.Equal(t, 401, resp.StatusCode)
	_, _, failed := inferences(t, r, resp.Header.Get("Turnlog-Conversation"))
	require.Len(t, failed, 1)
	assert.Contains(t, failed[0], "Incorrect API key provided: [credential redacted")
	assert.NotContains(t, string(storedBytes(t, r)), key[:20], "no part of the key is in the stream's stored bytes")
}

func TestThreadingByContent(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "")
	h := map[string]string{"Turnlog-Token": token}
	first := weatherAsk
	call := func(msgs string) string {
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	a := call(first)
	b := call(first)
	assert.NotEqual(t, a, b, "two chats with the same first call are two conversations")
	// Chat a goes on: its tool call (as the upstream issued it to a: call_1) and result.
	a1 := weatherToolCall
	a2 := call(first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`)
	assert.Equal(t, a, a2, "a call that begins with a's input and output continues a")
	// Back to a's state after its first call, with another result: a fork.
	f := call(first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"rainy"}`)
	assert.NotEqual(t, a, f)
	evs := conversationEvents(t, r.log, f)
	start, ok := evs[0].Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, a, start.ForkedFrom)
	started, _, _ := inferences(t, r, f)
	require.Len(t, started, 1)
	assert.Equal(t, "inferred", started[0].Gateway["threading"])
	for _, c := range []string{a, b, f} {
		verify(t, r.log, c)
	}
}

func TestConcurrentCallsOfOneConversation(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "")
	const n = 8
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "agents"},
				fmt.Sprintf(chatBody, fmt.Sprintf("sub-agent %d", i)))
			assert.Equal(t, 200, resp.StatusCode, "%s", body)
		}()
	}
	wg.Wait()
	started, finished, failed := inferences(t, r, "agents")
	assert.Len(t, started, n)
	assert.Equal(t, n, finished)
	assert.Empty(t, failed)
	verify(t, r.log, "agents")
}

// TestFailedCallWhoseOutcomeMeetsAnotherWrite: a failed call whose
// outcome found the conversation moved on (another call's step, an
// operator's change) panicked the recorder: the conflict path waited on a
// threading entry only a finished call has. The client got a reset
// connection instead of its 503, and the call stayed open, uncounted and
// untraced (found by the observability probe, with 50 concurrent failing
// calls of one conversation). Here another writer's step lands while the
// upstream holds the call.
func TestFailedCallWhoseOutcomeMeetsAnotherWrite(t *testing.T) {
	got, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		close(got)
		<-release
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"error":{"message":"overloaded","type":"server_error","param":null,"code":null}}`)
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	ctx := context.Background()
	done := make(chan int)
	go func() {
		status := 0 // no answer: a reset connection
		defer func() { done <- status }()
		req, err := http.NewRequest(http.MethodPost, r.gw.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, "hello")))
		if err != nil {
			return
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Turnlog-Token", token)
		req.Header.Set("Turnlog-Conversation", "moved-on")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if body, err := io.ReadAll(resp.Body); err == nil && strings.Contains(string(body), "overloaded") {
			status = resp.StatusCode
		}
	}()
	<-got
	require.Eventually(t, func() bool { started, _, _ := inferences(t, r, "moved-on"); return len(started) == 1 }, 10*time.Second, 10*time.Millisecond,
		"the call's input is recorded while the upstream works")
	last, err := r.log.LastSeq(ctx, "moved-on")
	require.NoError(t, err)
	_, err = r.log.Append(ctx, "moved-on", last, events.New("moved-on", "operator-step", 0, "operator", events.DataSet{Values: map[string]string{"note": "an operator's change"}}))
	require.NoError(t, err)
	close(release)
	assert.Equal(t, 503, <-done, "the client gets the upstream's answer")
	started, finished, failed := inferences(t, r, "moved-on")
	assert.Len(t, started, 1)
	assert.Zero(t, finished)
	assert.Len(t, failed, 1, "recorded as failed, after the other write")
}

func TestCutStreamAndClientDisconnect(t *testing.T) {
	cut := make(chan struct{})
	up := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if strings.Contains(r.Header.Get("X-Test"), "slow") {
			<-r.Context().Done()
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"It\"}}]}\n\n")
		w.(http.Flusher).Flush()
		<-cut
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	srv := &http.Server{Handler: up}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	logs := &syncbuf.Buffer{}
	r := newRig(t, "http://"+ln.Addr().String(), "", func(c *gateway.Config) { c.Logger = slog.New(slog.NewJSONHandler(logs, nil)) })
	// The standard logger, where ReverseProxy wrote a line of plain
	// text by default.
	std := &syncbuf.Buffer{}
	log.SetOutput(std)
	t.Cleanup(func() { log.SetOutput(os.Stderr) })

	t.Run("cut stream", func(t *testing.T) {
		req, _ := http.NewRequest(http.MethodPost, r.gw.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Turnlog-Token", token)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		buf := make([]byte, 10)
		_, err = io.ReadAtLeast(resp.Body, buf, 5)
		require.NoError(t, err, "the first event arrives before the stream ends")
		close(cut)
		_, err = io.ReadAll(resp.Body)
		assert.Error(t, err, "the client sees the stream cut")
		conv := resp.Header.Get("Turnlog-Conversation")
		require.Eventually(t, func() bool { _, _, f := inferences(t, r, conv); return len(f) == 1 }, 10*time.Second, 20*time.Millisecond)
		_, _, failed := inferences(t, r, conv)
		assert.Contains(t, failed[0], "cut")
		assert.NotContains(t, std.String(), "httputil", "nothing outside the gateway's log")
		assert.Contains(t, logs.String(), "ReverseProxy read error", "what the proxy says of the cut, in the gateway's log")
		for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
			assert.True(t, json.Valid([]byte(line)), "the gateway's log is one JSON object a line: %s", line)
		}
	})
	t.Run("client disconnect", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.gw.URL+"/v1/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		req.Header.Set("Turnlog-Token", token)
		req.Header.Set("Turnlog-Conversation", "gone")
		req.Header.Set("X-Test", "slow")
		go func() { time.Sleep(200 * time.Millisecond); cancel() }()
		_, err := http.DefaultClient.Do(req)
		require.Error(t, err)
		require.Eventually(t, func() bool { _, _, f := inferences(t, r, "gone"); return len(f) == 1 }, 10*time.Second, 20*time.Millisecond)
		_, _, failed := inferences(t, r, "gone")
		assert.Contains(t, failed[0], "client disconnected")
	})
}

func TestUpstreamErrorsAndTimeout(t *testing.T) {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		switch r.Header.Get("X-Test") {
		case "5xx":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"The engine is currently overloaded","type":"server_error","param":null,"code":null}}`)
		case "529":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(529)
			io.WriteString(w, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)
		case "stream-error":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Hel\"}}]}\n\n")
			io.WriteString(w, "data: {\"error\":{\"type\":\"server_error\",\"message\":\"The server had an error while processing your request\"}}\n\n")
		case "slow":
			select {
			case <-release:
			case <-r.Context().Done():
			}
		}
	}))
	t.Cleanup(up.Close)
	m := gateway.NewMetrics()
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.UpstreamTimeout = 300 * time.Millisecond; c.Metrics = m })
	for _, tc := range []struct {
		name, test string
		status     int
		body       string
		recorded   string
		// errorsTotal is the gateway's own error counted, "" when the
		// answer was the upstream's.
		errorsTotal string
	}{
		{"5xx as it came", "5xx", 503, "currently overloaded", "upstream answered 503 Service Unavailable: server_error: The engine is currently overloaded", ""},
		{"529 named", "529", 529, "Overloaded", "upstream answered 529 Overloaded: overloaded_error: Overloaded", ""},
		{"an error event after a 200", "stream-error", 200, "server had an error", "server_error: The server had an error while processing your request", ""},
		{"no answer in time", "slow", 504, "did not begin to answer within 300ms", "did not begin to answer within 300ms", `turnlog_gateway_errors_total{reason="upstream_timeout"} 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := "upstream-" + tc.test
			resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv, "X-Test": tc.test},
				fmt.Sprintf(chatBody, "hi"))
			assert.Equal(t, tc.status, resp.StatusCode)
			assert.Contains(t, string(body), tc.body)
			assert.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"))
			started, finished, failed := inferences(t, r, conv)
			assert.Len(t, started, 1)
			assert.Zero(t, finished)
			require.Len(t, failed, 1)
			assert.Contains(t, failed[0], tc.recorded)
			var transient bool
			for _, e := range conversationEvents(t, r.log, conv) {
				if p, ok := e.Payload.(events.InferenceFailed); ok {
					transient = p.Transient
				}
			}
			assert.True(t, transient, "a retry may succeed")
			// turnlog ls says the conversation's last call failed, and
			// why (it said "ok").
			listed := replay.Conversation{ID: conv}
			require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
			assert.True(t, listed.LastRequestFailed)
			assert.Contains(t, listed.LastFailure, tc.recorded)
			metrics := scrape(t, m)
			if tc.errorsTotal != "" {
				assert.Contains(t, metrics, tc.errorsTotal)
			}
			// A provider that answered, in time, is not one the gateway
			// could not reach.
			assert.NotContains(t, metrics, `turnlog_gateway_errors_total{reason="upstream"}`)
		})
	}
}

// TestInFlightBytesAreBounded: the request bodies the gateway holds at
// once are bounded in bytes (--max-inflight-bytes). A call that finds no
// room waits for it; one that waits too long is answered 503, in the
// API's error shape with Retry-After, and nothing of it is forwarded; the
// bytes of finished calls are given back.
func TestInFlightBytesAreBounded(t *testing.T) {
	release := make(chan struct{})
	var forwarded sync.WaitGroup
	var mu sync.Mutex
	seen := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		seen++
		first := seen == 1
		mu.Unlock()
		if first {
			forwarded.Done()
			<-release
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("ok"))
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "", managed, func(c *gateway.Config) {
		c.MaxBody, c.MaxInFlightBytes, c.InFlightWait = 64<<10, 64<<10, 300*time.Millisecond
	})
	h := map[string]string{"Authorization": "Bearer " + token}
	big := func(tag string) string { return fmt.Sprintf(chatBody, tag+strings.Repeat("x", 40<<10)) }

	forwarded.Add(1)
	firstDone := make(chan int, 1)
	go func() {
		resp, _ := post(t, r.gw.URL+"/v1/chat/completions", h, big("first"))
		firstDone <- resp.StatusCode
	}()
	forwarded.Wait() // the first call holds 40 KiB of the 64

	start := time.Now()
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", h, big("second"))
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s", body)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "it waited for room first")
	assert.Contains(t, string(body), "--max-inflight-bytes")
	assert.Contains(t, string(body), `"type":`, "in the API's error shape")
	assert.Equal(t, "1", resp.Header.Get("Retry-After"))
	mu.Lock()
	assert.Equal(t, 1, seen, "the refused call was not forwarded")
	mu.Unlock()

	// A call that finds no room at first gets it when the first ends.
	thirdDone := make(chan int, 1)
	go func() {
		resp, _ := post(t, r.gw.URL+"/v1/chat/completions", h, big("third"))
		thirdDone <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond)
	close(release)
	assert.Equal(t, 200, <-firstDone)
	assert.Equal(t, 200, <-thirdDone, "it waited and went on")
	// Everything was given back: a call of the largest body fits alone.
	resp, body = post(t, r.gw.URL+"/v1/chat/completions", h, fmt.Sprintf(chatBody, strings.Repeat("y", 60<<10)))
	assert.Equal(t, 200, resp.StatusCode, "%s", body)
}

// TestCallTooCostlyToReadIsRecordedByItsHash: --max-inflight-bytes
// bounded the bodies the gateway held, not what reading them took: a 27
// MB body of 800,000 tiny messages took 2.1 GB once read, and four at
// once 7.4 GB. What reading a call takes is now held among the bytes in
// flight; a call that would take more than the bound is forwarded and
// recorded by the hash of its bytes alone, saying why, and a call of
// ordinary messages is read as before.
func TestCallTooCostlyToReadIsRecordedByItsHash(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		c.MaxBody, c.MaxInFlightBytes = 64<<10, 1<<20
	})
	h := map[string]string{"Turnlog-Token": token}
	msgs := strings.TrimSuffix(strings.Repeat(`{"role":"user","content":"x"},`, 1500), ",")
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+msgs+`]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	conv := resp.Header.Get("Turnlog-Conversation")
	var started []events.InferenceStarted
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.InferenceStarted); ok {
			started = append(started, p)
		}
	}
	require.Len(t, started, 1)
	assert.Contains(t, started[0].Gateway["unparsed"], "more than --max-inflight-bytes (1 MiB); recorded by the hash of its bytes alone")
	assert.NotEmpty(t, started[0].Gateway["wire_sha256"], "by its hash")
	turn, err := r.log.Load(t.Context(), conv)
	require.NoError(t, err)
	for _, b := range turn.Blocks {
		assert.NotEqual(t, events.KindUser, b.Kind, "none of its messages read into blocks")
	}

	resp, body = post(t, r.gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[{"role":"user","content":"weather?"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	assert.Contains(t, blockTexts(t, r.log, resp.Header.Get("Turnlog-Conversation")), "weather?", "an ordinary call is read")
}
