package gateway_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// TestModelCallOnAnUnrecordedPathIsSaid: a model call on a path the
// gateway does not record (an Azure OpenAI deployment's route, as the
// Azure SDK builds it under its base URL) is forwarded, as every other
// /v1/ path, but no longer in silence: it is counted and its path logged,
// once. Other paths (a models list) are counted apart.
func TestModelCallOnAnUnrecordedPathIsSaid(t *testing.T) {
	up, seen := countingUpstream(t)
	m, logs, watched := watchedGateway()
	r := newRig(t, up.URL, "", watched)
	h := map[string]string{"Turnlog-Token": token}
	for range 2 {
		resp, body := post(t, r.gw.URL+"/v1/deployments/gpt-4o/chat/completions?api-version=2024-10-21", h, fmt.Sprintf(chatBody, "hi"))
		require.Equal(t, 200, resp.StatusCode, "%s", body)
	}
	req, err := http.NewRequest(http.MethodGet, r.gw.URL+"/v1/models", nil)
	require.NoError(t, err)
	req.Header.Set("Turnlog-Token", token)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()

	assert.Equal(t, int64(3), seen.Load(), "all forwarded")
	metrics := scrape(t, m)
	assert.Contains(t, metrics, `turnlog_gateway_unrecorded_forwards_total{kind="model_call"} 2`)
	assert.Contains(t, metrics, `turnlog_gateway_unrecorded_forwards_total{kind="other"} 1`)
	assert.Equal(t, 1, strings.Count(logs.String(), "forwarded a model call unrecorded"), "once a path: %s", logs.String())
	assert.Contains(t, logs.String(), "/v1/deployments/gpt-4o/chat/completions")
}

// TestBatchesAreSaidUnrecorded: a batch of model calls (Anthropic's
// /v1/messages/batches, OpenAI's /v1/batches) is forwarded, and said:
// counted as a model call forwarded unrecorded, and logged once a path
// with what to do instead.
func TestBatchesAreSaidUnrecorded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msgbatch_1","type":"message_batch","processing_status":"in_progress"}`)
	}))
	t.Cleanup(up.Close)
	m := gateway.NewMetrics()
	logs := &syncbuf.Buffer{}
	r := newRig(t, up.URL, up.URL, func(c *gateway.Config) { c.Metrics, c.Logger = m, slog.New(slog.NewTextHandler(logs, nil)) })
	for _, path := range []string{"/v1/messages/batches", "/v1/batches"} {
		resp, body := post(t, r.gw.URL+path, map[string]string{"Turnlog-Token": token}, `{"requests":[]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
	}
	assert.Contains(t, scrape(t, m), `turnlog_gateway_unrecorded_forwards_total{kind="model_call"} 2`)
	assert.Equal(t, 2, strings.Count(logs.String(), "forwarded a batch of model calls unrecorded"), "%s", logs.String())
}

// countingUpstream answers every call with a chat answer and counts the
// calls it was sent.
func countingUpstream(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var seen atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		seen.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("ok"))
	}))
	t.Cleanup(up.Close)
	return up, &seen
}

// watchedGateway is a rig option giving the gateway metrics and a log the
// test reads.
func watchedGateway() (*gateway.Metrics, *syncbuf.Buffer, rigOption) {
	m, logs := gateway.NewMetrics(), &syncbuf.Buffer{}
	return m, logs, func(c *gateway.Config) { c.Metrics, c.Logger = m, slog.New(slog.NewTextHandler(logs, nil)) }
}
