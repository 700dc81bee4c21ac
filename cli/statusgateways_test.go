package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/natsauth"
)

// TestStatusListsTheRunningGateways: status listed the workers but no
// recording gateway, so an operator running several `turnlog gateway`
// processes behind a load balancer could not see which ran. serve's
// gateway and a `turnlog gateway` are listed, with where they listen and
// how they take keys; a gateway that stops is no longer listed; the
// client key is told the list is not visible.
func TestStatusListsTheRunningGateways(t *testing.T) {
	s := startServe(t)
	t.Setenv("TURNLOG_ANTHROPIC_API_KEY", "sk-ant-managed-by-turnlog")
	_, _, stop := startGatewayCmd(t, s, "--openai-upstream", "http://user:secret@127.0.0.1:9/v1")
	type row struct {
		Instance       string            `json:"instance"`
		Listen         string            `json:"listen"`
		Upstreams      map[string]string `json:"upstreams"`
		Managed        []string          `json:"managed_keys"`
		RecordOptional bool              `json:"record_optional"`
		Running        bool              `json:"running"`
	}
	gateways := func() []row {
		t.Helper()
		out, code := runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "status", "--json", "--nats-url", s.natsURL)
		require.Equal(t, 0, code, out)
		var st struct {
			Gateways []row `json:"gateways"`
		}
		require.NoError(t, json.Unmarshal([]byte(out[strings.Index(out, "{"):]), &st), out)
		return st.Gateways
	}
	var rows []row
	require.Eventually(t, func() bool { rows = gateways(); return len(rows) == 2 }, 20*time.Second, 100*time.Millisecond, "serve's gateway and turnlog gateway")
	var cmd row
	for _, r := range rows {
		assert.True(t, r.Running, "%+v", r)
		assert.NotEmpty(t, r.Instance)
		if r.RecordOptional { // serve's is not
			cmd = r
		}
	}
	require.NotEmpty(t, cmd.Instance, "the gateway command's entry: %+v", rows)
	assert.Equal(t, []string{"anthropic"}, cmd.Managed)
	assert.Equal(t, "127.0.0.1:0", cmd.Listen, "as its command was given it")
	assert.Equal(t, "http://127.0.0.1:9/v1", cmd.Upstreams["openai"], "no password of a base URL")

	out, code := runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "status", "--nats-url", s.natsURL)
	require.Equal(t, 0, code, out)
	assert.Regexp(t, cmd.Instance+` +127\.0\.0\.1:0 +\S+ pid \d+ +\S+ +running +managed: anthropic +true`, out)
	assert.NotContains(t, out, "secret")
	assert.NotContains(t, out, "sk-ant-managed-by-turnlog")

	stop()
	require.Eventually(t, func() bool { return len(gateways()) == 1 }, 10*time.Second, 100*time.Millisecond, "a stopped gateway is no longer listed")

	// An entry another client wrote drives no terminal.
	nc := s.adminConn(t)
	require.NoError(t, nc.Publish("$KV.TURNLOG_GATEWAYS.FORGED", []byte(`{"instance":"FORGED","listen":"\u001b]0;pwned\u0007","host":"h","started":"2026-01-01T00:00:00Z","seen":"2026-01-01T00:00:00Z"}`)))
	require.NoError(t, nc.Flush())
	out, code = runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "status", "--nats-url", s.natsURL)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "FORGED")
	assert.NotContains(t, out, "\x1b", "no escape sequence reaches the terminal")

	client := natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Client)
	out, code = runCmd(t, []string{"NATS_CREDS=" + client}, "", "status", "--nats-url", s.natsURL)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "(the list of running gateways is not visible to this credential)")
}
