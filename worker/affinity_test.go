package worker

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
)

// TestConversationsStayWithTheirWorker: with two workers on every
// partition, the requests of a conversation keep going to the partition's
// preferred worker, which has its Turn cached; no request loads from the
// log (a conversation's first starts from an empty Turn). Without the prioritized pulls, about
// half the follow-ups would land on the other worker and load again.
func TestConversationsStayWithTheirWorker(t *testing.T) {
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)

	// Two names whose priorities differ on every partition, so that each
	// partition has one preferred worker (ties are legal, but share).
	var workers []*Worker
	for i := 0; len(workers) < 2; i++ {
		w, err := New(Config{Log: l, Conn: srv.Conn, Profiles: profiles, Name: fmt.Sprintf("w-%d", i),
			AckWait: 5 * time.Second, ShutdownGrace: time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		require.NoError(t, err)
		if len(workers) == 1 && !differEverywhere(workers[0], w, l.Partitions()) {
			continue
		}
		workers = append(workers, w)
	}
	for _, w := range workers {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = w.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}

	const convs, perConv = 6, 5
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for r := 0; r < perConv; r++ {
		for c := 0; c < convs; c++ {
			conv := fmt.Sprintf("stay-%d", c)
			turn, err := l.Load(ctx, conv)
			require.NoError(t, err)
			req, err := Send(ctx, l, Request{Conversation: conv, Text: fmt.Sprintf("message %d", r)})
			require.NoError(t, err)
			_, err = Await(ctx, l, conv, req.RequestID, turn.Seq, turn.Events)
			require.NoError(t, err)
		}
	}

	var fromLog, fromCache, fresh float64
	for _, w := range workers {
		fromLog += counterValue(t, w.metrics.loads.WithLabelValues("log"))
		fromLog += counterValue(t, w.metrics.loads.WithLabelValues("cache_and_tail"))
		fromCache += counterValue(t, w.metrics.loads.WithLabelValues("cache"))
		fresh += counterValue(t, w.metrics.loads.WithLabelValues("new"))
	}
	assert.Equal(t, float64(convs*perConv), fromLog+fromCache+fresh, "every request counted once")
	assert.Equal(t, float64(convs), fresh, "a conversation's first request starts from an empty Turn, read from nowhere")
	// A pull that expires (every 5 s) can let one request through to the
	// other worker; allow that, not a coin toss per request.
	assert.LessOrEqual(t, fromLog, 2.0, "log loads: the follow-ups hit the cache")
}

func differEverywhere(a, b *Worker, partitions int) bool {
	for p := 0; p < partitions; p++ {
		if a.priority(p) == b.priority(p) {
			return false
		}
	}
	return true
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	var m dto.Metric
	require.NoError(t, c.Write(&m))
	return m.GetCounter().GetValue()
}
