package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/repair"
)

// A spooled call of a conversation whose log is damaged cannot be
// recorded until the conversation is repaired; the calls spooled after it
// for other conversations are recorded all the same, and it is once the
// conversation is repaired. The drain used to stop at it for good: every
// later spooled call waited behind it, and every new call went to the
// spool too (it was not empty), until the spool was full and the gateway
// answered every call 503.
func TestSpooledCallOfADamagedConversationHoldsUpNoOther(t *testing.T) {
	up := newChatUpstream(t, "")
	c := newCuttable(t, up.URL, 1<<20)
	spoiled := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "spoiled"}
	postOK(t, c.gw.URL+"/v1/chat/completions", spoiled, fmt.Sprintf(chatBody, "one"))
	c.cut(t)
	postOK(t, c.gw.URL+"/v1/chat/completions", spoiled, fmt.Sprintf(chatBody, "two"))
	postOK(t, c.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "fine"}, fmt.Sprintf(chatBody, "three"))
	require.Equal(t, 2, spooled(t, c.spool))

	ctx := context.Background()
	l, err := eventlog.Open(ctx, c.srv.Conn)
	require.NoError(t, err)
	_, err = l.JetStream().Publish(ctx, l.Names().EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged:1"))
	require.NoError(t, err)
	c.restore(t)

	require.Eventually(t, func() bool { return spooled(t, c.spool) == 1 }, 20*time.Second, 20*time.Millisecond,
		"the other conversation's call is recorded: %s", c.logs)
	started, finished, _ := inferences(t, &rig{log: l}, "fine")
	assert.Len(t, started, 1)
	assert.Equal(t, 1, finished)
	assert.Contains(t, c.logs.String(), "turnlog repair --yes spoiled", "the log says what holds the call")
	assert.Equal(t, 1, strings.Count(c.logs.String(), "waits in the spool until its conversation is repaired"), "said once: %s", c.logs)

	plan, err := repair.Inspect(ctx, l, "spoiled")
	require.NoError(t, err)
	_, err = repair.Apply(ctx, l, plan)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return spooled(t, c.spool) == 0 }, 40*time.Second, 50*time.Millisecond,
		"recorded once the conversation is repaired: %s", c.logs)
	started, finished, _ = inferences(t, &rig{log: l}, "spoiled")
	assert.Len(t, started, 2)
	assert.Equal(t, 2, finished)
}
