package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
)

// A spooled call whose answer is kept while the drain reads its
// provisional file (NATS back, the call still at the provider) is
// recorded with that answer: the drain must not take the provisional
// file it read before the call ended for the call, which would record
// a call the app got an answer to as failed ("the gateway stopped
// before it kept the call's answer") and delete the answer. Large
// bodies make the drain's read of each file long, and the calls end one
// by one while it reads them over and over.
func TestSpooledCallEndingWhileTheDrainReadsItIsRecordedWithItsAnswer(t *testing.T) {
	const calls = 8
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		<-release
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer("answered"))
	}))
	t.Cleanup(up.Close)
	c := newCuttable(t, up.URL, 1<<30)
	c.cut(t)
	big := strings.Repeat("x", 3<<20)
	var wg sync.WaitGroup
	statuses := make([]int, calls)
	for i := range calls {
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, c.gw.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, big)))
			req.Header.Set("Turnlog-Token", token)
			req.Header.Set("Turnlog-Conversation", fmt.Sprintf("inflight-%d", i))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	require.Eventually(t, func() bool {
		files, _ := filepath.Glob(filepath.Join(c.spool, "*.call"))
		return len(files) == calls
	}, 20*time.Second, 10*time.Millisecond, "every call has its file before it is at the provider")
	c.restore(t)
	time.Sleep(300 * time.Millisecond) // the drain reads the provisional files
	for range calls {
		release <- struct{}{}
		time.Sleep(37 * time.Millisecond)
	}
	wg.Wait()
	for i, s := range statuses {
		require.Equal(t, http.StatusOK, s, "call %d", i)
	}
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 30*time.Second, 20*time.Millisecond, "recorded")
	l, err := eventlog.Open(t.Context(), c.srv.Conn)
	require.NoError(t, err)
	r := &rig{log: l}
	for i := range calls {
		started, finished, failed := inferences(t, r, fmt.Sprintf("inflight-%d", i))
		assert.Len(t, started, 1, "call %d", i)
		assert.Equal(t, 1, finished, "call %d: the app got its answer", i)
		assert.Empty(t, failed, "call %d", i)
	}
}
