package gateway_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// R1: readingBytes counts '{' inside JSON strings. A 1.2 MB call whose one
// message is a JSON document as text (a tool result, a pasted file) is
// costed at > 256 MiB under the DEFAULT --max-inflight-bytes and recorded
// by its hash alone.
// TestBracesInTextAreNoObjectsToRead: what reading a call takes was
// estimated from every '{' in its body, those in a message's text too, so
// a call whose one message is a JSON document pasted as text (1.2 MB) was
// costed over the default bound and recorded by its hash alone (review).
func TestBracesInTextAreNoObjectsToRead(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "")                  // defaults: 32 MiB body, 256 MiB in flight
	doc := strings.Repeat(`{\"a\":1},`, 110000) // ~1.2 MB of text
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
		`{"model":"m","messages":[{"role":"user","content":"`+doc+`"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	conv := resp.Header.Get("Turnlog-Conversation")
	for _, e := range conversationEvents(t, r.log, conv) {
		if p, ok := e.Payload.(events.InferenceStarted); ok {
			assert.Empty(t, p.Gateway["unparsed"], "a one-message 1.2 MB call is read")
		}
	}
	assert.NotEmpty(t, blockTexts(t, r.log, conv))
}

// R2: grow holds the body's bytes while it waits for more (hold-and-wait).
// Two calls that each fit alone, arriving together, both wait the whole
// InFlightWait and are both refused 503.
// TestTwoCallsThatFitDoNotWaitForEachOther: a call waited for room to
// read its body while holding the body's bytes, so two calls that each
// fit held half each and waited for each other until both were answered
// 503 (review).
func TestTwoCallsThatFitDoNotWaitForEachOther(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("ok"))
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		c.MaxBody, c.MaxInFlightBytes, c.InFlightWait = 1<<20, 1<<20, time.Second
	})
	body := fmt.Sprintf(chatBody, strings.Repeat("x", 460<<10)) // need ≈ 0.9 MiB
	send := func(delay bool) int {
		pr, pw := io.Pipe()
		req, _ := http.NewRequest(http.MethodPost, r.gw.URL+"/v1/chat/completions", pr)
		req.ContentLength = int64(len(body))
		req.Header.Set("Turnlog-Token", token)
		req.Header.Set("Content-Type", "application/json")
		go func() {
			if delay {
				time.Sleep(300 * time.Millisecond) // both calls reserve their bodies first
			}
			io.WriteString(pw, body)
			pw.Close()
		}()
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	require.Equal(t, 200, send(false), "one such call alone fits")
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Go(func() { codes[i] = send(true) })
	}
	wg.Wait()
	assert.Equal(t, []int{200, 200}, codes, "two calls that each fit alone, and were both served before this commit")
}

// skewedThreads is the installation's threading index as seen by a gateway
// whose clock is behind the erasing process's by skew.
type skewedThreads struct {
	*eventlog.Threads
	conv string
	skew time.Duration
}

func (s skewedThreads) Get(ctx context.Context, key string) (string, bool, error) {
	v, ok, err := s.Threads.Get(ctx, key)
	if ok && key == calls.ErasedKey(s.conv) {
		at, _ := time.Parse(time.RFC3339Nano, v)
		v = at.Add(s.skew).Format(time.RFC3339Nano)
	}
	return v, ok, err
}

// R3: erasedAfterMade compares the erasing process's clock with the
// gateway's. With the eraser 2 s ahead, a call made after the erasure
// (starting the conversation anew under its name) is dropped as erased.
// TestEraserClockDoesNotDecideWhatIsErased: a call's start (this
// gateway's clock) was compared with the erasure note's time (the erasing
// process's clock): an eraser 2 s ahead made a call made after the
// erasure count as made before, and dropped it (review).
func TestEraserClockDoesNotDecideWhatIsErased(t *testing.T) {
	for _, skew := range []time.Duration{0, 2 * time.Second} {
		t.Run(skew.String(), func(t *testing.T) {
			up := newFixedUpstream(t, chatAnswer("noted"))
			logs := &syncbuf.Buffer{}
			r := newRig(t, up.URL, "", func(c *gateway.Config) {
				threads, err := c.Log.(*eventlog.Log).Threads(t.Context())
				require.NoError(t, err)
				c.Threads = skewedThreads{Threads: threads, conv: "erz", skew: skew}
				c.Logger = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			})
			runGateway(t, r)
			h := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "erz"}
			postOK(t, r.gw.URL+"/v1/chat/completions", h, fmt.Sprintf(chatBody, "my secret"))
			_, err := r.log.Erase(t.Context(), "erz")
			require.NoError(t, err)
			require.Eventually(t, func() bool { return strings.Contains(logs.String(), "erased conversation") }, 10*time.Second, 10*time.Millisecond)
			postOK(t, r.gw.URL+"/v1/chat/completions", h, fmt.Sprintf(chatBody, "made after the erasure"))
			assert.Equal(t, []string{"made after the erasure"}, userTexts(t, r, "erz"), "a call made after the erasure is recorded")
		})
	}
}

// countingLog counts the events wentOn reads.
type countingLog struct {
	*eventlog.Log
	calls, read *atomic.Int64
}

func (c countingLog) Events(ctx context.Context, conv string) iter.Seq2[eventlog.Record, error] {
	pc, _, _, _ := runtime.Caller(1)
	if !strings.Contains(runtime.FuncForPC(pc).Name(), "wentOn") {
		return c.Log.Events(ctx, conv)
	}
	c.calls.Add(1)
	return func(yield func(eventlog.Record, error) bool) {
		for rec, err := range c.Log.Events(ctx, conv) {
			c.read.Add(1)
			if !yield(rec, err) {
				return
			}
		}
	}
}

// R4: two gateways behind a load balancer, one ordinary chat alternating
// between them (no siblings, no failures): each call on the gateway whose
// cached Turn is one call behind makes wentOn read the whole conversation.
// TestAlternatingGatewaysDoNotReadTheWholeConversation: a gateway's
// cached Turn one call behind (two gateways alternating on one chat) made
// every call read the whole conversation to look for a sibling, 1,820
// events for 30 calls of a 123-event chat (review).
func TestAlternatingGatewaysDoNotReadTheWholeConversation(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	var nCalls, nRead atomic.Int64
	gw := func() *httptest.Server {
		nc, l, threads := workerLog(t, s)
		g, err := gateway.New(gateway.Config{Log: countingLog{l, &nCalls, &nRead}, Connected: nc.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1", Threads: threads})
		require.NoError(t, err)
		hs := httptest.NewServer(g)
		t.Cleanup(hs.Close)
		return hs
	}
	gws := []*httptest.Server{gw(), gw()}
	msgs := []string{`{"role":"system","content":"s"}`, `{"role":"user","content":"q0"}`}
	conv := ""
	const n = 30
	for i := range n {
		resp, body := post(t, gws[i%2].URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m","messages":[`+strings.Join(msgs, ",")+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		if i == 0 {
			conv = resp.Header.Get("Turnlog-Conversation")
		}
		require.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "call %d continues", i)
		var out struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(body, &out))
		msgs = append(msgs, string(out.Choices[0].Message))
		var m struct {
			ToolCalls []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		}
		require.NoError(t, json.Unmarshal(out.Choices[0].Message, &m))
		if len(m.ToolCalls) > 0 {
			msgs = append(msgs, `{"role":"tool","tool_call_id":"`+m.ToolCalls[0].ID+`","content":"sunny"}`)
		} else {
			msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"q%d"}`, i+1))
		}
	}
	t.Logf("wentOn ran %d times over %d calls, reading %d events (conversation now %d events)",
		nCalls.Load(), n, nRead.Load(), len(conversationEvents(t, mustOpen(t, s), conv)))
	assert.Zero(t, nCalls.Load(), "no call went on past another: wentOn need not read the log")
}

func mustOpen(t *testing.T, s *natstest.Server) *eventlog.Log {
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	return l
}

// failingThreads is the shared index refusing writes while failing is set
// (a full bucket, a timeout): what the gateway logs as "call not indexed
// for threading" and goes on.
type failingThreads struct {
	*eventlog.Threads
	failing *atomic.Bool
}

var errIndexDown = errors.New("index write refused")

func (f failingThreads) Put(ctx context.Context, pairs map[string]string) error {
	if f.failing.Load() {
		return errIndexDown
	}
	return f.Threads.Put(ctx, pairs)
}

func (f failingThreads) PutAsync(pairs map[string]string) (func(context.Context) error, error) {
	if f.failing.Load() {
		return nil, errIndexDown
	}
	return f.Threads.PutAsync(pairs)
}

// R5: the shared index behind the log (a write that failed, as here; a
// lagging replica): a call whose own history holds the finished call past
// the state the index gives is not its sibling, but wentOn forks it.
// TestContinuationPastAnUnindexedCallContinues: a call whose history holds
// an answer the shared index missed (its write refused, or a lagging
// replica) was taken for a sibling of that call and forked (review).
func TestContinuationPastAnUnindexedCallContinues(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	var failing atomic.Bool
	gw := func() *httptest.Server {
		nc, l, threads := workerLog(t, s)
		g, err := gateway.New(gateway.Config{Log: l, Connected: nc.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1", Threads: failingThreads{threads, &failing}})
		require.NoError(t, err)
		hs := httptest.NewServer(g)
		t.Cleanup(hs.Close)
		return hs
	}
	a, b := gw(), gw()
	call := chatCaller(t)
	first := `{"role":"system","content":"s"},{"role":"user","content":"weather?"}`
	conv := call(a, first)
	second := first + `,` + weatherToolCall + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
	failing.Store(true)
	require.Equal(t, conv, call(a, second))
	failing.Store(false)
	third := second + `,{"role":"assistant","content":"It is sunny.","refusal":null,"annotations":[]},{"role":"user","content":"thanks"}`
	assert.Equal(t, conv, call(b, third), "the app's next call, holding call 2's answer, continues the conversation")
}
