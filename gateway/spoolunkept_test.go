package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// A call forwarded while NATS is away whose answer the spool cannot write
// (a full or failed disk) is cut, and said: counted unrecorded and logged
// as an error naming the call's conversation and the spool, as a live
// call the log refuses is. It used to be said only by net/http's proxy
// at WARN, and counted nowhere: the provider did the call, and neither
// the log nor the spool nor the metrics held a trace of it.
func TestSpooledCallTheDiskRefusesIsSaid(t *testing.T) {
	var spool string
	upstream := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		upstream++
		// While the provider works, the disk loses the spool: its answer
		// cannot be kept.
		require.NoError(t, os.RemoveAll(spool))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("lost"))
	}))
	t.Cleanup(up.Close)
	m := gateway.NewMetrics()
	c := newCuttable(t, up.URL, 1<<20, func(cfg *gateway.Config) { cfg.Metrics = m })
	spool = c.spool
	c.cut(t)

	req, err := http.NewRequest(http.MethodPost, c.gw.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, "while down")))
	require.NoError(t, err)
	req.Header.Set("Turnlog-Token", token)
	req.Header.Set("Turnlog-Conversation", "unkept")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Error(t, err, "not answered whole: %d %s", resp.StatusCode, body)
	}
	assert.Equal(t, 1, upstream, "forwarded")
	assert.Contains(t, scrape(t, m), `turnlog_gateway_calls_total{api="chat.completions",outcome="unrecorded"} 1`)
	assert.Contains(t, c.logs.String(), `level=ERROR msg="gateway: call not kept in the spool`)
	assert.Contains(t, c.logs.String(), "conversation=unkept")
}
