package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// askedUpstream is a stand-in of the Responses API's background mode
// whose app never fetches the response through the gateway (a webhook
// tells it): a call with background: true is answered "queued"
// (resp_wh); GET /v1/responses/resp_wh answers "in_progress" twice, then
// the completed response. It keeps every GET it was sent.
type askedUpstream struct {
	*httptest.Server
	mu   sync.Mutex
	gets []*http.Request
}

func newAskedUpstream(t *testing.T) *askedUpstream {
	u := &askedUpstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodGet {
			u.mu.Lock()
			u.gets = append(u.gets, r.Clone(context.Background()))
			n := len(u.gets)
			u.mu.Unlock()
			if r.URL.Path != "/v1/responses/resp_wh" {
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"error":{"message":"not found","type":"invalid_request_error"}}`)
				return
			}
			if n <= 2 {
				io.WriteString(w, `{"id":"resp_wh","object":"response","created_at":1,"status":"in_progress","background":true,"model":"m","output":[],"usage":null}`)
				return
			}
			io.WriteString(w, `{"id":"resp_wh","object":"response","created_at":1,"completed_at":61,"status":"completed","background":true,"model":"m","output":[{"type":"message","id":"msg_wh","status":"completed","role":"assistant","content":[{"type":"output_text","text":"the answer the webhook announced","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":6,"total_tokens":11}}`)
			return
		}
		io.WriteString(w, `{"id":"resp_wh","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *askedUpstream) asked() []*http.Request {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*http.Request(nil), u.gets...)
}

// runGateway runs the rig's gateway (Run: what asks about background
// responses) until the test ends.
func runGateway(t *testing.T, r *rig) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); r.g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// waitFinished waits until conv holds a call's inference.finished, and
// returns those it holds; why says what the test waits for.
func waitFinished(t *testing.T, l *eventlog.Log, conv, why string) []events.InferenceFinished {
	t.Helper()
	var finished []events.InferenceFinished
	require.Eventually(t, func() bool {
		finished = finished[:0]
		for _, e := range conversationEvents(t, l, conv) {
			if p, ok := e.Payload.(events.InferenceFinished); ok {
				finished = append(finished, p)
			}
		}
		return len(finished) > 0
	}, 15*time.Second, 20*time.Millisecond, why)
	return finished
}

// TestBackgroundEndIsAskedForWithAManagedKey: an app that queues a
// background response and learns of its end by a webhook never fetches
// it through the gateway, and its call stayed open for ever: the record
// never held the answer. With a managed OpenAI key the gateway asks the
// provider itself (the key, the include list and project the call named,
// no Turnlog header), and records the end as the call's outcome; once it is
// recorded it stops asking.
func TestBackgroundEndIsAskedForWithAManagedKey(t *testing.T) {
	up := newAskedUpstream(t)
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		c.OpenAIKey = "sk-provider-secret"
		c.BackgroundPoll = 20 * time.Millisecond
	})
	runGateway(t, r)
	resp, _ := postOK(t, r.gw.URL+"/v1/responses", map[string]string{"Authorization": "Bearer " + token, "OpenAI-Project": "proj_research"},
		`{"model":"m","input":"a long job","background":true,"include":["reasoning.encrypted_content"]}`)
	conv := resp.Header.Get("Turnlog-Conversation")

	finished := waitFinished(t, r.log, conv, "the background response's end is recorded without a fetch by the app")
	require.Len(t, finished, 1)
	assert.Equal(t, "resp_wh", finished[0].ResponseID)
	assert.Equal(t, 60*time.Second, finished[0].Duration, "the provider's own account")
	assert.Equal(t, []string{"a long job", "the answer the webhook announced"}, blockTexts(t, r.log, conv))
	listed := replay.Conversation{ID: conv}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.False(t, listed.LastRequestOpen, "ls no longer says it is open")
	verify(t, r.log, conv)

	asked := up.asked()
	require.GreaterOrEqual(t, len(asked), 3, "asked while it ran, then once it ended")
	for _, g := range asked {
		assert.Equal(t, "/v1/responses/resp_wh", g.URL.Path)
		assert.Equal(t, []string{"reasoning.encrypted_content"}, g.URL.Query()["include[]"], "what the call asked the provider to include")
		assert.Equal(t, "Bearer sk-provider-secret", g.Header.Get("Authorization"), "with the managed key")
		assert.Equal(t, "proj_research", g.Header.Get("OpenAI-Project"), "in the project the call was made in")
		for h := range g.Header {
			assert.False(t, strings.HasPrefix(strings.ToLower(h), "turnlog-"), "no Turnlog header goes upstream: %s", h)
		}
	}
	time.Sleep(300 * time.Millisecond) // some 10 asks' worth, were it still asking
	assert.Len(t, up.asked(), len(asked), "recorded: no longer asked")
}

// TestBackgroundEndIsNotAskedForWithoutAKey: without a managed key the
// gateway has no key of its own to ask with (the app's went with its
// call), and with BackgroundPoll negative it is told not to: the call
// stays open until a fetch through the gateway, and the provider is
// asked nothing.
func TestBackgroundEndIsNotAskedForWithoutAKey(t *testing.T) {
	for name, tc := range map[string]struct {
		opt func(*gateway.Config)
		hdr map[string]string
	}{
		"pass-through": {func(*gateway.Config) {}, map[string]string{"Turnlog-Token": token, "Authorization": "Bearer sk-app-own"}},
		"turned off": {func(c *gateway.Config) { c.OpenAIKey, c.BackgroundPoll = "sk-provider-secret", -1 },
			map[string]string{"Authorization": "Bearer " + token}},
	} {
		t.Run(name, func(t *testing.T) {
			up := newAskedUpstream(t)
			r := newRig(t, up.URL, "", func(c *gateway.Config) {
				c.BackgroundPoll = 20 * time.Millisecond
				tc.opt(c)
			})
			runGateway(t, r)
			resp, _ := postOK(t, r.gw.URL+"/v1/responses", tc.hdr, `{"model":"m","input":"a long job","background":true}`)
			time.Sleep(300 * time.Millisecond)
			assert.Empty(t, up.asked(), "the provider is asked nothing")
			listed := replay.Conversation{ID: resp.Header.Get("Turnlog-Conversation")}
			require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
			assert.True(t, listed.LastRequestOpen, "the call waits for a fetch through the gateway")
		})
	}
}

// TestSlowBackgroundAskHoldsUpNoOther: the gateway asked about its
// background responses one after another, each ask waiting up to 30 s
// for the provider, so one the provider was slow to answer held up every
// other (with thousands followed, a round took longer than the waits it
// keeps). Asks now run several at once: a response whose end is told at
// once is recorded while another's ask still waits.
func TestSlowBackgroundAskHoldsUpNoOther(t *testing.T) {
	hung := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/v1/responses/resp_slow":
			select { // the provider never answers this one
			case <-hung:
			case <-r.Context().Done():
			}
		case r.Method == http.MethodGet:
			io.WriteString(w, `{"id":"resp_fast","object":"response","created_at":1,"completed_at":2,"status":"completed","background":true,"model":"m","output":[{"type":"message","id":"msg_f","status":"completed","role":"assistant","content":[{"type":"output_text","text":"fast","annotations":[]}]}],"usage":{"input_tokens":1,"output_tokens":1,"total_tokens":2}}`)
		case strings.Contains(string(b), "slow job"):
			io.WriteString(w, `{"id":"resp_slow","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
		default:
			io.WriteString(w, `{"id":"resp_fast","object":"response","created_at":1,"status":"queued","background":true,"model":"m","output":[],"usage":null}`)
		}
	}))
	t.Cleanup(up.Close)
	t.Cleanup(func() { close(hung) })
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		c.OpenAIKey = "sk-provider-secret"
		c.BackgroundPoll = 20 * time.Millisecond
	})
	runGateway(t, r)
	hdr := map[string]string{"Authorization": "Bearer " + token}
	postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","input":"a slow job","background":true}`)
	time.Sleep(100 * time.Millisecond) // its ask is under way, and hangs
	resp, _ := postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","input":"a fast job","background":true}`)
	fast := resp.Header.Get("Turnlog-Conversation")
	waitFinished(t, r.log, fast, "the fast response's end is recorded while the slow one's ask waits (30 s)")
}

// TestSpooledBackgroundCallIsAskedAbout: a call answered "queued" while
// NATS was away (--record-optional) went to the spool, and was recorded
// open once NATS was back, but the gateway never asked how its response
// ended: a webhook app's call stayed open for ever. It is now followed
// once the spool records it, asked about in the project it named.
func TestSpooledBackgroundCallIsAskedAbout(t *testing.T) {
	up := newAskedUpstream(t)
	c := newCuttable(t, up.URL, 1<<20, func(cfg *gateway.Config) {
		cfg.OpenAIKey = "sk-provider-secret"
		cfg.BackgroundPoll = 20 * time.Millisecond
	})
	l, err := eventlog.Open(t.Context(), c.srv.Conn)
	require.NoError(t, err)
	c.cut(t)
	postOK(t, c.gw.URL+"/v1/responses", map[string]string{"Authorization": "Bearer " + token, "Turnlog-Conversation": "bg-spooled", "OpenAI-Project": "proj_research"},
		`{"model":"m","input":"a long job","background":true,"include":["reasoning.encrypted_content"]}`)
	require.Equal(t, 1, spooled(t, c.spool))
	c.restore(t)
	waitFinished(t, l, "bg-spooled", "the spooled call's response is asked about and its end recorded")
	assert.Equal(t, []string{"a long job", "the answer the webhook announced"}, blockTexts(t, l, "bg-spooled"))
	verify(t, l, "bg-spooled")
	for _, g := range up.asked() {
		assert.Equal(t, []string{"reasoning.encrypted_content"}, g.URL.Query()["include[]"])
		assert.Equal(t, "proj_research", g.Header.Get("OpenAI-Project"), "in the project the call named")
	}
}

// TestSpooledCallRecordedBeforeACrashIsAskedAbout: a gateway that stopped
// after recording a spooled call and before removing its file (a crash)
// leaves the file renamed *.recording; the next gateway on that spool
// finds the call in the log and does not record it twice. A background
// call's response must still be asked about then: it was not, and the
// webhook app's call stayed open for ever.
func TestSpooledCallRecordedBeforeACrashIsAskedAbout(t *testing.T) {
	up := newAskedUpstream(t)
	c := newCuttable(t, up.URL, 1<<20) // no managed key: it asks about nothing
	l, err := eventlog.Open(t.Context(), c.srv.Conn)
	require.NoError(t, err)
	c.cut(t)
	postOK(t, c.gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token, "Authorization": "Bearer sk-app", "Turnlog-Conversation": "bg-crashed"},
		`{"model":"m","input":"a long job","background":true}`)
	files, err := filepath.Glob(filepath.Join(c.spool, "*.call"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	kept, err := os.ReadFile(files[0])
	require.NoError(t, err)
	c.restore(t)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 20*time.Second, 20*time.Millisecond, "recorded")
	require.Len(t, startedOf(t, l, "bg-crashed"), 1)

	// The crash: the file was renamed for recording, the call recorded,
	// the file not removed. Another gateway, with a managed key, opens
	// that spool.
	dir := filepath.Join(t.TempDir(), "spool")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.Base(files[0])+".recording"), kept, 0o600))
	threads, err := l.Threads(t.Context())
	require.NoError(t, err)
	g, err := gateway.New(gateway.Config{Log: l, Connected: c.srv.Conn.IsConnected, Token: token, OpenAIUpstream: up.URL + "/v1",
		Threads: threads, RecordOptional: true, SpoolDir: dir, OpenAIKey: "sk-provider-secret", BackgroundPoll: 20 * time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); g.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	waitFinished(t, l, "bg-crashed", "the response of the call found recorded is asked about, and its end recorded")
	assert.Len(t, startedOf(t, l, "bg-crashed"), 1, "not recorded twice")
	assert.Equal(t, []string{"a long job", "the answer the webhook announced"}, blockTexts(t, l, "bg-crashed"))
}

// startedOf returns the inference.started events of conversation conv.
func startedOf(t *testing.T, l *eventlog.Log, conv string) []events.InferenceStarted {
	t.Helper()
	var out []events.InferenceStarted
	for _, e := range conversationEvents(t, l, conv) {
		if p, ok := e.Payload.(events.InferenceStarted); ok {
			out = append(out, p)
		}
	}
	return out
}
