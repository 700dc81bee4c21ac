package cli

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGatewayBannerSaysWhetherRecordingIsOptional: the gateway's start-up
// lines said nothing of --record-optional, so an operator could not tell
// from its output whether calls are forwarded unrecorded while NATS is
// away, nor where they wait to be recorded. The banner says both.
func TestGatewayBannerSaysWhetherRecordingIsOptional(t *testing.T) {
	s := startServe(t)
	spool := filepath.Join(t.TempDir(), "spool")
	_, out, stop := startGatewayCmd(t, s, "--spool-dir", spool)
	stop()
	assert.Contains(t, out.String(), "turnlog: record-optional: on: while NATS is unreachable calls are forwarded and kept in the spool "+spool+", recorded once NATS is back")

	require.Contains(t, s.out.String(), "recording gateway for OpenAI SDKs", "serve's banner")
	assert.Contains(t, s.out.String(), "turnlog: record-optional: off: while NATS is unreachable calls are answered 503 and not forwarded (--record-optional forwards and spools them)")
}
