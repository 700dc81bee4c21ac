package worker_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// sendAll sends reqs requests to each of convs conversations, the
// conversations in parallel and each conversation's requests in order, and
// returns the request IDs per conversation in the order sent.
func sendAll(t *testing.T, l *eventlog.Log, prefix string, convs, reqs int, text func(c, r int) string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	sent := make(map[string][]string, convs)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for c := 0; c < convs; c++ {
		conv := fmt.Sprintf("%s-%d", prefix, c)
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			var ids []string
			for r := 0; r < reqs; r++ {
				req := worker.Request{Conversation: conv, RequestID: ulid.Make().String(), Text: text(c, r)}
				for {
					// A send during a server restart may fail; the same
					// request ID makes the retry safe.
					if _, err := worker.Send(ctx, l, req); err == nil {
						break
					}
					time.Sleep(100 * time.Millisecond)
				}
				ids = append(ids, req.RequestID)
			}
			mu.Lock()
			sent[conv] = ids
			mu.Unlock()
		}(c)
	}
	wg.Wait()
	return sent
}

// waitDone waits until every conversation's last request has ended.
func waitDone(t *testing.T, l *eventlog.Log, sent map[string][]string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for conv, ids := range sent {
		for {
			tail, err := l.Last(context.Background(), conv)
			if err == nil && tail.Cause == ids[len(ids)-1] && tail.Closed() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("conversation %s did not finish its %d requests in %s (last: %+v, err %v)", conv, len(ids), within, tail.Cause, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// checkLog proves, for every conversation, that each request ran exactly
// once, in the order sent, without interleaving: its events are one
// contiguous run that starts with user.appended and ends with
// request.completed, and no block appears twice.
func checkLog(t *testing.T, l *eventlog.Log, sent map[string][]string) {
	t.Helper()
	for conv, ids := range sent {
		var causes []string
		var runs [][]events.Type
		blocks := map[string]bool{}
		for rec, err := range l.Events(context.Background(), conv) {
			require.NoError(t, err)
			if len(causes) == 0 || causes[len(causes)-1] != rec.Cause {
				causes = append(causes, rec.Cause)
				runs = append(runs, nil)
			}
			runs[len(runs)-1] = append(runs[len(runs)-1], rec.Type)
			if id := blockID(rec.Event); id != "" {
				require.False(t, blocks[id], "%s: block %s twice", conv, id)
				blocks[id] = true
			}
		}
		require.Equal(t, ids, causes, "%s: every request once, in the order sent, never interleaved", conv)
		for i, run := range runs {
			assert.Equal(t, events.TypeUserAppended, run[0], "%s request %d starts with its user block", conv, i)
			assert.Equal(t, events.TypeRequestCompleted, run[len(run)-1], "%s request %d ends completed", conv, i)
			n := 0
			for _, ty := range run {
				if ty == events.TypeUserAppended || ty == events.TypeRequestCompleted {
					n++
				}
			}
			assert.Equal(t, 2, n, "%s request %d: one user block, one completion", conv, i)
		}
	}
}

func blockID(e events.Event) string {
	switch p := e.Payload.(type) {
	case events.UserAppended:
		return p.BlockID
	case events.LLMTextAppended:
		return p.BlockID
	case events.ReasoningAppended:
		return p.BlockID
	case events.ToolCalled:
		return p.BlockID
	case events.ToolResult:
		return p.BlockID
	case events.SystemPromptSet:
		return p.BlockID
	}
	return ""
}

func chatText(c, r int) string {
	if r%4 == 3 {
		return fmt.Sprintf("count the words in conversation %d request %d", c, r)
	}
	return fmt.Sprintf("message %d of conversation %d", r, c)
}

// TestOrderingUnderLoad: 3 workers, 50 conversations x 20 requests sent at
// once. Each conversation's requests run one at a time, in order, while
// conversations run in parallel.
func TestOrderingUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("1,000 requests")
	}
	srv := natstest.Start(t)
	var l *eventlog.Log
	for i := 0; i < 3; i++ {
		l = startWorker(t, srv, nil)
	}
	sent := sendAll(t, l, "order", 50, 20, chatText)
	waitDone(t, l, sent, 3*time.Minute)
	checkLog(t, l, sent)
}
