package gateway_test

import (
	"github.com/turnlog/turnlog/internal/syncbuf"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestUpstreamURLsAreChecked: an upstream that cannot be a provider's base
// URL as its SDK takes it is refused at start, and the error names the
// flag and gives that flag's own example, not the other provider's.
func TestUpstreamURLsAreChecked(t *testing.T) {
	s := natstest.Start(t)
	l, err := eventlog.Open(t.Context(), s.Conn)
	require.NoError(t, err)
	for _, tc := range []struct {
		name              string
		openai, anthropic string
		want              []string // in the error; none: accepted
	}{
		{name: "anthropic without a scheme", anthropic: "api.anthropic.com",
			want: []string{"--anthropic-upstream", "such as https://api.anthropic.com"}},
		{name: "openai without a scheme", openai: "api.openai.com/v1",
			want: []string{"--openai-upstream", "such as https://api.openai.com/v1"}},
		{name: "anthropic ending in /v1", anthropic: "http://127.0.0.1:18092/v1",
			want: []string{"--anthropic-upstream", "ends in /v1", "the Anthropic SDK's base URL, without /v1: http://127.0.0.1:18092"}},
		{name: "anthropic ending in /v1/", anthropic: "https://api.anthropic.com/v1/",
			want: []string{"--anthropic-upstream", "without /v1: https://api.anthropic.com"}},
		{name: "anthropic behind a proxy's path", anthropic: "https://proxy.example/anthropic"},
		{name: "openai-compatible without /v1", openai: "https://api.deepseek.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := gateway.New(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token,
				OpenAIUpstream: tc.openai, AnthropicUpstream: tc.anthropic})
			if len(tc.want) == 0 {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			if tc.anthropic != "" {
				assert.NotContains(t, err.Error(), "api.openai.com", "the Anthropic flag's example is Anthropic's")
			}
		})
	}
}

// TestOpenAIUpstreamWithoutV1IsWarned: OpenAI-compatible servers put
// their API under paths of their own, so no OpenAI upstream is refused;
// but one with no path at all (most serve under /v1), or OpenAI's own
// host without /v1, gets one WARN line at start saying what its calls
// will reach.
func TestOpenAIUpstreamWithoutV1IsWarned(t *testing.T) {
	s := natstest.Start(t)
	l, err := eventlog.Open(t.Context(), s.Conn)
	require.NoError(t, err)
	for _, tc := range []struct {
		name, openai string
		want         string // in the log; "": no warning
	}{
		{name: "openai's host without /v1", openai: "https://api.openai.com", want: "https://api.openai.com/v1"},
		{name: "openai's host with another path", openai: "https://api.openai.com/v2/", want: "https://api.openai.com/v1"},
		{name: "a local server without a path", openai: "http://127.0.0.1:11434/", want: "http://127.0.0.1:11434/v1"},
		{name: "openai's base URL", openai: "https://api.openai.com/v1"},
		{name: "a local server's /v1", openai: "http://127.0.0.1:8000/v1/"},
		{name: "a path of the server's own", openai: "https://generativelanguage.googleapis.com/v1beta/openai/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &syncbuf.Buffer{}
			_, err := gateway.New(gateway.Config{Log: l, Connected: s.Conn.IsConnected, Token: token,
				OpenAIUpstream: tc.openai, Logger: slog.New(slog.NewTextHandler(logs, nil))})
			require.NoError(t, err, "an OpenAI upstream is never refused for its path")
			if tc.want == "" {
				assert.NotContains(t, logs.String(), "--openai-upstream")
				return
			}
			assert.Equal(t, 1, strings.Count(logs.String(), "level=WARN"), "%s", logs.String())
			assert.Contains(t, logs.String(), "--openai-upstream")
			assert.Contains(t, logs.String(), tc.want)
		})
	}
}
