package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/sdktest"
	"github.com/turnlog/turnlog/replay"
)

const token = "tl-test-token-0123456789"

// rig is a gateway on a real embedded JetStream server in front of
// stand-in upstreams, with the wire between them logged.
type rig struct {
	srv  *natstest.Server
	log  *eventlog.Log
	gw   *httptest.Server
	g    *gateway.Gateway
	wire *wireLog
}

type rigOption func(*gateway.Config)

func newRig(t *testing.T, openai, anthropic string, opts ...rigOption) *rig {
	t.Helper()
	s := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	wire := &wireLog{next: http.DefaultTransport}
	cfg := gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token, OpenAIUpstream: openai + "/v1",
		AnthropicUpstream: anthropic, Transport: wire}
	if openai == "" {
		cfg.OpenAIUpstream = ""
	}
	if anthropic == "" {
		cfg.AnthropicUpstream = ""
	}
	for _, o := range opts {
		o(&cfg)
	}
	g, err := gateway.New(cfg)
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	return &rig{srv: s, log: l, gw: hs, g: g, wire: wire}
}

// sdkResult is what the fixtures' wire.js reports.
type sdkResult struct {
	Sent          []string `json:"sent"`
	Received      []string `json:"received"`
	Conversations []string `json:"conversations"`
	Texts         []string `json:"texts"`
	// Contents are the answers' content as the SDK read them, where a
	// script reports them.
	Contents []json.RawMessage `json:"contents"`
}

func runSDK(t *testing.T, script string, env ...string) sdkResult {
	t.Helper()
	prefix := sdktest.Install(t)
	out := sdktest.Run(t, prefix, filepath.Join("testdata", script), env...)
	var res sdkResult
	require.NoError(t, json.Unmarshal(out, &res), "script output: %s", out)
	return res
}

// verify runs replay --verify's check on a conversation.
func verify(t *testing.T, l *eventlog.Log, conv string) *replay.Verification {
	t.Helper()
	v, err := replay.Verify(context.Background(), l, conv)
	require.NoError(t, err)
	require.True(t, v.OK(), "replay --verify: %+v", v.Mismatches)
	// What --verify proves, replay's timeline and its calls view show:
	// every model call verified, but one whose request was not read.
	var parsed []bool // by model call
	for e, err := range replay.Entries(context.Background(), l, conv) {
		require.NoError(t, err)
		if e.Inference == nil {
			continue
		}
		p := e.Payload.(events.InferenceStarted)
		parsed = append(parsed, p.Gateway["unparsed"] == "")
		assert.Equal(t, parsed[len(parsed)-1], e.Inference.Verified, "replay's timeline, model call #%d of %s", e.Inference.Index, conv)
		assert.NotEmpty(t, p.Gateway["api"], "model call #%d names its API, read or not", e.Inference.Index)
		var text strings.Builder
		require.NoError(t, e.WriteText(&text))
		if p.Gateway["unparsed"] != "" {
			// Nothing to re-project is not a mismatch: the timeline
			// said "NOT VERIFIED: the log re-projects to another input".
			assert.Contains(t, text.String(), "not verifiable: the gateway could not read the request")
			assert.NotContains(t, text.String(), "NOT VERIFIED")
		}
	}
	unparsed := 0
	for _, ok := range parsed {
		if !ok {
			unparsed++
		}
	}
	assert.Equal(t, unparsed, v.Unparsed, "--verify counts the calls it had no input to re-project of")
	page, err := replay.Calls(context.Background(), l, conv, replay.Page{})
	require.NoError(t, err)
	require.Len(t, page.Calls, len(parsed))
	for i, c := range page.Calls {
		assert.Equal(t, parsed[i], c.Verified, "replay's calls view, model call #%d of %s", c.Call, conv)
		assert.Equal(t, !parsed[i], c.Unparsed != "", "replay's calls view says why call #%d was not read", c.Call)
	}
	return v
}

// conversationEvents reads a conversation's events.
func conversationEvents(t *testing.T, l *eventlog.Log, conv string) []events.Event {
	t.Helper()
	var out []events.Event
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		out = append(out, r.Event)
	}
	return out
}

func TestMain(m *testing.M) { os.Exit(m.Run()) }

// noThreadingEntryOf asserts that no entry of the threading index names
// conv (erased: no hash of its content stays).
func noThreadingEntryOf(t *testing.T, l *eventlog.Log, conv string) {
	t.Helper()
	ctx := context.Background()
	kv, err := l.JetStream().KeyValue(ctx, l.Names().ThreadsBucket)
	require.NoError(t, err)
	keys, err := kv.ListKeys(ctx)
	require.NoError(t, err)
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		require.NoError(t, err)
		assert.False(t, strings.Contains(string(e.Value()), conv), "entry %s=%s of the erased conversation", k, e.Value())
	}
}
