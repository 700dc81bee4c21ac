package chatclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/chatclient"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestAskPassesTheRequestsEventsOnce: OnEvent sees every event of the
// request, the tool call and its result among them, once each and in the
// log's order; a second Ask of the same request (resumed by ID) sees them
// again, once.
func TestAskPassesTheRequestsEventsOnce(t *testing.T) {
	srv := natstest.Start(t)
	startWorker(t, srv)
	c, l := client(t, srv)

	for _, resumed := range []bool{false, true} {
		var got []string
		var positions []int
		req := worker.Request{Conversation: "feed", RequestID: "01JAAAAAAAAAAAAAAAAAAAAAAA", Text: "count the words in a b c"}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		_, err := c.Ask(ctx, req, nil, chatclient.OnEvent(func(rec eventlog.Record) {
			got = append(got, string(rec.Type))
			positions = append(positions, rec.Pos)
		}))
		cancel()
		require.NoError(t, err, "resumed: %v", resumed)

		var want []string
		var wantPos []int
		for rec, err := range l.Events(context.Background(), "feed") {
			require.NoError(t, err)
			if rec.Cause == req.RequestID {
				want = append(want, string(rec.Type))
				wantPos = append(wantPos, rec.Pos)
			}
		}
		assert.Equal(t, want, got, "resumed: %v", resumed)
		assert.Equal(t, wantPos, positions, "resumed: %v", resumed)
		assert.Contains(t, got, string(events.TypeToolCalled))
		assert.Contains(t, got, string(events.TypeToolResult))
	}
}
