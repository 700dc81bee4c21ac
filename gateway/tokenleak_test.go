package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTokenNeverGoesUpstream: a client that sent turnlog's token both as
// its API key and in Turnlog-Token was taken for a pass-through call, and
// its Authorization, turnlog's token, went to the provider. With a managed
// key the call is now the managed call it meant (the provider key goes
// upstream); without one it is refused, and nothing is forwarded.
func TestTokenNeverGoesUpstream(t *testing.T) {
	both := map[string]string{"Authorization": "Bearer " + token, "Turnlog-Token": token}
	t.Run("managed key", func(t *testing.T) {
		up := newChatUpstream(t, "sk-provider-secret")
		r := newRig(t, up.URL, "", managed)
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", both, fmt.Sprintf(chatBody, "hi"))
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		sent, _, headers := r.wire.snapshot()
		require.Len(t, sent, 1)
		for name, vs := range headers[0] {
			assert.NotContains(t, strings.Join(vs, " "), token, name)
		}
		assert.Equal(t, "Bearer sk-provider-secret", headers[0].Get("Authorization"))
	})
	t.Run("pass-through only", func(t *testing.T) {
		up := newChatUpstream(t, "")
		r := newRig(t, up.URL, "")
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", both, fmt.Sprintf(chatBody, "hi"))
		assert.Equal(t, 401, resp.StatusCode, "%s", body)
		assert.Contains(t, string(body), "never sent to the provider")
		sent, _, _ := r.wire.snapshot()
		assert.Empty(t, sent, "nothing was forwarded")
	})
}
