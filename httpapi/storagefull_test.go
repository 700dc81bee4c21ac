package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/internal/storagetest"
)

// Issue 24: with JetStream's storage full, POST .../messages answered 500
// "nats: timeout ... check that NATS is reachable" after 5 s. It is
// refused at once with the cause and what to do.
func TestPostMessageStorageFull(t *testing.T) {
	srv := natstest.Start(t, natstest.WithMaxStore(8<<20))
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn, eventlog.WithStorageBudget(8<<20))
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)

	storagetest.Fill(t, l)
	for _, body := range []string{`{"text":"hello"}`, `{"text":"hello","request_id":"01KB0000000000000000000000"}`} {
		status, out, hdr := call(t, ts, "POST", "/conversations/c1/messages", "Bearer "+token, body)
		assert.Equal(t, http.StatusServiceUnavailable, status, body)
		assert.Contains(t, out["error"], "JetStream storage is full: ", body)
		assert.Contains(t, out["error"], "raise --max-store", body)
		assert.NotEmpty(t, hdr.Get("Retry-After"))
	}
}
