package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
)

// A spooled call whose input the drain stored but whose outcome the log
// refused (NATS lost again in between, or the gateway killed there) is
// finished by the next drain: its answer, which reached the client, is
// recorded once. The drain used to find the call's inference.started,
// take the call as recorded and delete its file: the answer was lost and
// the call left open.
func TestSpooledCallWhoseOutcomeWasRefusedIsFinished(t *testing.T) {
	up := newChatUpstream(t, "")
	var l *refuseOutcomes
	c := newCuttable(t, up.URL, 1<<20, func(cfg *gateway.Config) {
		l = &refuseOutcomes{Log: cfg.Log.(*eventlog.Log)}
		cfg.Log = l
	})
	c.cut(t)
	named := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "halfway"}
	resp, body := post(t, c.gw.URL+"/v1/chat/completions", named, fmt.Sprintf(chatBody, "while down"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	require.Equal(t, 1, spooled(t, c.spool))

	l.refuse.Store(true)
	c.restore(t)
	require.Eventually(t, func() bool {
		return strings.Contains(c.logs.String(), "spooled calls not recorded yet")
	}, 20*time.Second, 20*time.Millisecond, "the drain stored the input, and the log refused the outcome: %s", c.logs)
	l.refuse.Store(false)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 20*time.Second, 20*time.Millisecond, "the spool drains")

	ll, err := eventlog.Open(context.Background(), c.srv.Conn)
	require.NoError(t, err)
	started, finished, failed := inferences(t, &rig{log: ll}, "halfway")
	assert.Len(t, started, 1, "recorded once")
	assert.Equal(t, 1, finished, "the answer the client got is recorded")
	assert.Empty(t, failed)
	verify(t, ll, "halfway")
}
