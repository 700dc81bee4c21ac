package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// A spooled call whose file cannot be read back is set aside as .bad,
// and no longer counted as waiting: calls made once NATS is back are
// recorded as they happen. Its bytes used to stay counted, so the gateway
// took the spool for non-empty for good and sent every later call to it
// (answered before it was recorded, turnlog_gateway_spool_bytes never 0)
// until it was restarted.
func TestSpooledCallSetAsideAsBadIsNoLongerWaiting(t *testing.T) {
	up := newChatUpstream(t, "")
	m := gateway.NewMetrics()
	c := newCuttable(t, up.URL, 1<<20, func(cfg *gateway.Config) { cfg.Metrics = m })
	c.cut(t)
	named := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "damaged"}
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", named, `{"model":"m","messages":[{"role":"user","content":"while down"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	files, err := filepath.Glob(filepath.Join(c.spool, "*.call"))
	require.NoError(t, err)
	require.Len(t, files, 1)
	require.NoError(t, os.Truncate(files[0], 100)) // a disk that lost the file's end

	c.restore(t)
	require.Eventually(t, func() bool {
		_, err := os.Stat(files[0] + ".bad")
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "set aside: %s", c.logs)
	assert.Contains(t, c.logs.String(), "a spooled call cannot be read")

	resp, body = post(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "later"}, `{"model":"m","messages":[{"role":"user","content":"NATS is back"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	var lines []string
	for _, ln := range strings.Split(scrape(t, m), "\n") {
		if strings.HasPrefix(ln, "turnlog_gateway_spool_bytes") || strings.HasPrefix(ln, "turnlog_gateway_calls_total") {
			lines = append(lines, ln)
		}
	}
	assert.Contains(t, lines, "turnlog_gateway_spool_bytes 0", "nothing waits")
	assert.Contains(t, lines, `turnlog_gateway_calls_total{api="chat.completions",outcome="spooled"} 1`, "the call made with NATS up was not spooled")
	assert.Contains(t, lines, `turnlog_gateway_calls_total{api="chat.completions",outcome="finished"} 1`, "it was recorded as it happened")
}
