package gateway_test

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// TestSpoolGaugeCountsCallsInFlight: during an outage, a call at the
// provider holds its room in the spool (its provisional file, and what
// its answer may take), which counts against --spool-bytes; the gauge
// said 0 until some call ended, so an operator watching a long stream in
// an outage saw an empty spool that was filling up.
func TestSpoolGaugeCountsCallsInFlight(t *testing.T) {
	up := newChatUpstream(t, "")
	up.hold = make(chan struct{})
	m := gateway.NewMetrics()
	c := newCuttable(t, up.URL, 1<<20, func(cfg *gateway.Config) { cfg.Metrics = m })
	c.cut(t)
	done := make(chan int, 1)
	go func() {
		resp, _ := post(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m","messages":[{"role":"user","content":"a long one"}]}`)
		done <- resp.StatusCode
	}()
	gauge := regexp.MustCompile(`(?m)^turnlog_gateway_spool_bytes (\S+)$`)
	bytes := func() float64 {
		g := gauge.FindStringSubmatch(scrape(t, m))
		if g == nil {
			return -1
		}
		v, _ := strconv.ParseFloat(g[1], 64)
		return v
	}
	assert.Eventually(t, func() bool { return spooled(t, c.spool) == 1 }, 10*time.Second, 10*time.Millisecond, "the call's provisional file")
	assert.Greater(t, bytes(), 0.0, "the call in flight holds room in the spool")
	close(up.hold)
	require.Equal(t, 200, <-done)
	assert.Greater(t, bytes(), 0.0, "the call waits in the spool")
}
