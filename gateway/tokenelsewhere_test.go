package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// TestTokenInAnotherCredentialHeaderNeverGoesUpstream: the gateway
// checked turnlog's token in the one header it took the API key from
// (Anthropic's x-api-key before Authorization) and forwarded the others
// unchanged, so a call that also carried the token in another of the
// headers a provider reads a key from (Authorization beside an x-api-key,
// Azure's api-key) handed it to the provider. Such a call is now refused
// (401, nothing forwarded), in both key modes.
func TestTokenInAnotherCredentialHeaderNeverGoesUpstream(t *testing.T) {
	const messagesBody = `{"model":"claude-test","max_tokens":16,"messages":[{"role":"user","content":"hi"}]}`
	const messagesAnswer = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`
	for _, tc := range []struct {
		name    string
		path    string
		body    string
		opts    []func(*gateway.Config)
		headers map[string]string
	}{
		{
			name: "anthropic pass-through, token in Authorization beside the app's x-api-key",
			path: "/v1/messages", body: messagesBody,
			headers: map[string]string{"Turnlog-Token": token, "X-Api-Key": "sk-ant-app-own-key", "Authorization": "Bearer " + token, "Anthropic-Version": "2023-06-01"},
		},
		{
			name: "openai pass-through, token in x-api-key beside the app's Authorization",
			path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "hi"),
			headers: map[string]string{"Turnlog-Token": token, "Authorization": "Bearer sk-app-own-key", "X-Api-Key": token},
		},
		{
			name: "openai managed, token in api-key too",
			path: "/v1/chat/completions", body: fmt.Sprintf(chatBody, "hi"),
			opts:    []func(*gateway.Config){managed},
			headers: map[string]string{"Authorization": "Bearer " + token, "Api-Key": token},
		},
		{
			name: "anthropic managed, token in api-key too",
			path: "/v1/messages", body: messagesBody,
			opts:    []func(*gateway.Config){func(c *gateway.Config) { c.AnthropicKey = "sk-ant-provider-secret" }},
			headers: map[string]string{"X-Api-Key": token, "Api-Key": token, "Anthropic-Version": "2023-06-01"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFixedUpstream(t, chatAnswer("Hello."))
			if strings.HasPrefix(tc.path, "/v1/messages") {
				up = newFixedUpstream(t, messagesAnswer)
			}
			var opts []rigOption
			for _, o := range tc.opts {
				opts = append(opts, o)
			}
			r := newRig(t, up.URL, up.URL, opts...)
			resp, body := post(t, r.gw.URL+tc.path, tc.headers, tc.body)
			sent, _, headers := r.wire.snapshot()
			for i := range headers {
				for name, vs := range headers[i] {
					assert.NotContains(t, strings.Join(vs, " "), token, "turnlog's token went upstream in %s", name)
				}
			}
			assert.Equal(t, 401, resp.StatusCode, "%s", body)
			assert.Contains(t, string(body), "never sent to the provider")
			require.Empty(t, sent, "nothing was forwarded")
		})
	}
}
