package gateway_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// TestWrongBaseURLIsSaid: an app whose SDK's base URL is wrong for the
// gateway (an OpenAI SDK's without /v1, an Anthropic SDK's with it) is
// answered 404 in its API's error shape saying what the base URL should
// be, with or without a token, and nothing is forwarded; the log says it
// once a path.
func TestWrongBaseURLIsSaid(t *testing.T) {
	up, seen := countingUpstream(t)
	m, logs, watched := watchedGateway()
	r := newRig(t, up.URL, up.URL, watched)
	host := strings.TrimPrefix(r.gw.URL, "http://")
	openai := map[string]string{"Authorization": "Bearer sk-provider", "Turnlog-Token": token}
	anthropic := map[string]string{"X-Api-Key": "sk-ant-provider", "Anthropic-Version": "2023-06-01", "Turnlog-Token": token}
	for _, tc := range []struct {
		name      string
		path      string
		header    map[string]string
		anthropic bool
		want      string
	}{
		{name: "openai sdk without /v1, chat", path: "/chat/completions", header: openai,
			want: "an OpenAI SDK's base URL must end in /v1: http://" + host + "/v1"},
		{name: "openai sdk without /v1, responses", path: "/responses", header: openai,
			want: "http://" + host + "/v1"},
		{name: "openai sdk without /v1, no token", path: "/embeddings", header: map[string]string{"Authorization": "Bearer sk-provider"},
			want: "http://" + host + "/v1"},
		{name: "anthropic sdk with /v1", path: "/v1/v1/messages", header: anthropic, anthropic: true,
			want: "the Anthropic SDK's base URL is turnlog's address without /v1: http://" + host},
		{name: "anthropic sdk with /v1, no token", path: "/v1/v1/messages", header: map[string]string{"X-Api-Key": "sk-ant-provider"}, anthropic: true,
			want: "without /v1: http://" + host},
		{name: "/v1 twice otherwise", path: "/v1/v1/chat/completions", header: openai,
			want: "/v1 twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for range 2 {
				resp, body := post(t, r.gw.URL+tc.path, tc.header, fmt.Sprintf(chatBody, "hi"))
				shape := misdirectedAnswer(t, resp, body)
				assert.Contains(t, shape.Error.Message, tc.want)
				if tc.anthropic {
					assert.Equal(t, "error", shape.Type, "Anthropic's error shape: %s", body)
					assert.Equal(t, "not_found_error", shape.Error.Type)
				} else {
					assert.Empty(t, shape.Type, "OpenAI's error shape: %s", body)
					assert.Equal(t, "invalid_request_error", shape.Error.Type)
				}
			}
			assert.Equal(t, 1, strings.Count(logs.String(), "path="+tc.path+" "), "logged once: %s", logs.String())
		})
	}
	assert.Zero(t, seen.Load(), "nothing forwarded")
	assert.Contains(t, scrape(t, m), `turnlog_gateway_errors_total{reason="misdirected"} 12`)
}

// TestWrongBaseURLBehindAProxy: behind a proxy that terminates TLS (or
// serves the gateway under another name), the base URL the hint gives is
// the one the app reaches, from X-Forwarded-Proto and X-Forwarded-Host
// (the Forwarded header's proto and host too), not the listener's plain
// http and its own address. A header that cannot be a scheme or a host
// is not used.
func TestWrongBaseURLBehindAProxy(t *testing.T) {
	up, _ := countingUpstream(t)
	r := newRig(t, up.URL, up.URL)
	host := strings.TrimPrefix(r.gw.URL, "http://")
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   string
	}{
		{name: "x-forwarded", header: map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-Host": "llm.example.com"},
			want: "https://llm.example.com/v1"},
		{name: "proto alone", header: map[string]string{"X-Forwarded-Proto": "https"}, want: "https://" + host + "/v1"},
		{name: "forwarded", header: map[string]string{"Forwarded": `for=10.0.0.1;proto=https;host="llm.example.com:8443"`},
			want: "https://llm.example.com:8443/v1"},
		{name: "first proxy's", header: map[string]string{"X-Forwarded-Proto": "https, http", "X-Forwarded-Host": "llm.example.com, inner:8090"},
			want: "https://llm.example.com/v1"},
		{name: "not a scheme or a host", header: map[string]string{"X-Forwarded-Proto": "javascript", "X-Forwarded-Host": "evil.example/path?x=<b>"},
			want: "http://" + host + "/v1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := post(t, r.gw.URL+"/chat/completions", tc.header, fmt.Sprintf(chatBody, "hi"))
			require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), "must end in /v1: "+tc.want+";")
		})
	}
}

// TestAnthropicBaseURLWithoutV1IsSaid: a client that appends /messages to
// its base URL (the Vercel AI SDK's @ai-sdk/anthropic, whose base URL ends
// in /v1) given turnlog's address without /v1, as the official SDKs take
// it, calls POST /messages: it is answered 404 in Anthropic's shape with
// the base URL it needs, not the HTTP API's 401 asking for a token it
// sent, and nothing is forwarded.
func TestAnthropicBaseURLWithoutV1IsSaid(t *testing.T) {
	up, seen := countingUpstream(t)
	r := newRig(t, up.URL, up.URL)
	host := strings.TrimPrefix(r.gw.URL, "http://")
	for _, path := range []string{"/messages", "/messages/count_tokens"} {
		req, err := http.NewRequest(http.MethodPost, r.gw.URL+path, strings.NewReader(`{"model":"m","max_tokens":8,"messages":[]}`))
		require.NoError(t, err)
		assert.True(t, r.g.Handles(req), "%s is the gateway's to answer on a shared listener", path)
		resp, body := post(t, r.gw.URL+path, map[string]string{"X-Api-Key": token, "Anthropic-Version": "2023-06-01"}, `{"model":"m","max_tokens":8,"messages":[]}`)
		shape := misdirectedAnswer(t, resp, body)
		assert.Equal(t, "error", shape.Type, "Anthropic's error shape: %s", body)
		assert.Contains(t, shape.Error.Message, "base URL is turnlog's address with /v1: http://"+host+"/v1")
	}
	assert.Zero(t, seen.Load(), "nothing forwarded")
}

// errorShape is an error answer as both APIs write it (Anthropic's with
// "type": "error" beside "error").
type errorShape struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// misdirectedAnswer checks that the gateway answered a call whose path
// shows a wrong base URL itself, 404, saying nothing was forwarded, and
// returns the answer read.
func misdirectedAnswer(t *testing.T, resp *http.Response, body []byte) errorShape {
	t.Helper()
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "%s", body)
	assert.Equal(t, "gateway", resp.Header.Get(gateway.ErrorHeader))
	var shape errorShape
	require.NoError(t, json.Unmarshal(body, &shape), "%s", body)
	assert.Contains(t, shape.Error.Message, "nothing was forwarded")
	return shape
}
