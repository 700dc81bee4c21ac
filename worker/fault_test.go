package worker_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// crashOnce fires at the n-th time the named point is reached, once.
type crashOnce struct {
	mu    sync.Mutex
	point string
	n     int
	seen  int
	fired bool
}

func (c *crashOnce) hasFired() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fired
}

func (c *crashOnce) fault(point string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if point != c.point || c.fired {
		return nil
	}
	c.seen++
	if c.seen == c.n {
		c.fired = true
		return errors.New("killed")
	}
	return nil
}

// pending is how many requests wait in the work queue (unacknowledged).
func pending(t *testing.T, l *eventlog.Log) uint64 {
	s, err := l.JetStream().Stream(context.Background(), l.Names().RequestsStream)
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	return info.State.Msgs
}

// TestCrashAtEveryPointLosesAndDuplicatesNothing kills the request in hand
// (no ack, no further events) before its user block lands, between its tool
// call and the tool's result, and after its last event but before the ack.
// The redelivered request resumes from what the log holds.
func TestCrashAtEveryPointLosesAndDuplicatesNothing(t *testing.T) {
	tests := []struct {
		name  string
		point string
		n     int
	}{
		// Steps of this request: 1 user block, system prompt and the first
		// inference.started; 2 the tool call and inference.finished; 3 the
		// tool's result; 4 the second inference.started; 5 the answer,
		// inference.finished and request.completed.
		{"before the user block is built", "user", 1},
		{"before the user block and the model call land", "step", 1},
		{"during the model call, before its output lands", "step", 2},
		{"between the tool call and its result", "step", 3},
		{"between the tool result and the second model call", "step", 4},
		{"before the answer and request.completed land", "step", 5},
		{"after the last event, before the ack", "completed", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			crash := &crashOnce{point: tc.point, n: tc.n}
			l := startWorker(t, natstest.Start(t), func(c *worker.Config) {
				c.Fault = crash.fault
				c.AckWait = time.Second
			})
			res, err := ask(t, l, "c", "count the words in one two three four")
			require.NoError(t, err)
			assert.Equal(t, `There are 4 words in "one two three four".`, res.Answer)
			// The answer can be in the log before the crash after it fires;
			// wait for the crash and for the redelivered request's ack.
			require.Eventually(t, crash.hasFired, 10*time.Second, 10*time.Millisecond, "the fault point was reached")
			require.Eventually(t, func() bool { return pending(t, l) == 0 }, 20*time.Second, 20*time.Millisecond, "the request is acknowledged in the end")

			counts := map[events.Type]int{}
			completed := -1
			for rec, err := range l.Events(context.Background(), "c") {
				require.NoError(t, err)
				counts[rec.Type]++
				if p, ok := rec.Payload.(events.RequestCompleted); ok {
					completed = p.Inferences
				}
			}
			// request.completed counts every model call the request made,
			// those of the deliveries before the crash too.
			assert.Equal(t, counts[events.TypeInferenceStarted], completed, "request.completed's model calls")
			assert.Equal(t, 1, counts[events.TypeUserAppended], "one user block")
			assert.Equal(t, 1, counts[events.TypeToolCalled], "one tool call")
			assert.Equal(t, 1, counts[events.TypeToolResult], "one tool result")
			assert.Equal(t, 1, counts[events.TypeRequestCompleted], "completed once")
			assert.Equal(t, 1, counts[events.TypeSystemPromptSet], "one system prompt")
			// A model call the crash interrupted is made again, and the
			// record says the first never answered: no call stays open.
			assert.Equal(t, counts[events.TypeInferenceStarted], counts[events.TypeInferenceFinished]+counts[events.TypeInferenceFailed],
				"every model call started is closed (%v)", counts)
			// replay --rerun reproduces the request: the interrupted call
			// is one the request made again, not one that failed it.
			profiles, err := profile.Load("")
			require.NoError(t, err)
			rerun, err := replay.Rerun(context.Background(), l, "c", profiles[profile.DefaultName])
			require.NoError(t, err)
			assert.True(t, rerun.OK(), "replay --rerun: %+v", rerun.Difference)
			v, err := replay.Verify(context.Background(), l, "c")
			require.NoError(t, err)
			assert.True(t, v.OK(), "replay --verify: %+v", v.Mismatches)
			checked, err := replay.Check(context.Background(), l, "c")
			require.NoError(t, err)
			assert.Empty(t, checked.Findings, "replay --check")
		})
	}
}
