package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
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

	text := strings.Repeat("f", 60<<10)
	var seq uint64
	for i := 0; ; i++ {
		require.Less(t, i, 10_000, "the storage never filled")
		s, err := l.Append(ctx, "filler", seq, events.New("filler", fmt.Sprint("fill", i), 0, "test", events.UserAppended{BlockID: fmt.Sprint("b", i), Text: text}))
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrStorageFull)
			break
		}
		seq = s
	}
	for _, body := range []string{`{"text":"hello"}`, `{"text":"hello","request_id":"01KB0000000000000000000000"}`} {
		status, out, hdr := call(t, ts, "POST", "/conversations/c1/messages", "Bearer "+token, body)
		assert.Equal(t, http.StatusServiceUnavailable, status, body)
		assert.Contains(t, out["error"], "JetStream storage is full: ", body)
		assert.Contains(t, out["error"], "raise --max-store", body)
		assert.NotEmpty(t, hdr.Get("Retry-After"))
	}
}
