package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
)

// A call forwarded while NATS is away whose file the spool cannot write
// (a full or failed disk) is cut, and said: counted unrecorded and logged
// as an error naming the call's conversation and the spool, as a live
// call the log refuses is. It used to be said only by net/http's proxy
// at WARN, and counted nowhere: the provider did the call, and neither
// the log nor the spool nor the metrics held a trace of it.
func TestSpooledCallTheDiskRefusesIsSaid(t *testing.T) {
	up := newChatUpstream(t, "")
	m := gateway.NewMetrics()
	c := newCuttable(t, up.URL, 1<<20, func(cfg *gateway.Config) { cfg.Metrics = m })
	c.cut(t)
	require.NoError(t, os.RemoveAll(c.spool)) // the disk lost it: nothing can be written there

	req, err := http.NewRequest(http.MethodPost, c.gw.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, "while down")))
	require.NoError(t, err)
	req.Header.Set("Turnlog-Token", token)
	req.Header.Set("Turnlog-Conversation", "unkept")
	if resp, err := http.DefaultClient.Do(req); err == nil {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Error(t, err, "not answered whole: %d %s", resp.StatusCode, body)
	}
	assert.Equal(t, 1, up.calls(), "forwarded")
	assert.Contains(t, scrape(t, m), `turnlog_gateway_calls_total{api="chat.completions",outcome="unrecorded"} 1`)
	assert.Contains(t, c.logs.String(), `level=ERROR msg="gateway: call not kept in the spool`)
	assert.Contains(t, c.logs.String(), "conversation=unkept")
}
