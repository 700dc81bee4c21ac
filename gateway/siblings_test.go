package gateway_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestSiblingCallsFork: calls made at the same moment that each continue
// one answer (an app asking several follow-ups of it at once, no
// conversation named) were recorded one after the other in one
// conversation, the second with the first's blocks "removed"
// (history_rewritten, a finding against an app that rewrote nothing).
// As documented, a call whose conversation went on since the state it
// continues forks it there: one sibling continues, each other one forks,
// on one gateway and across two, and no finding is made.
func TestSiblingCallsFork(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	call := chatCaller(t)
	const first = `{"role":"system","content":"s"},{"role":"user","content":"weather?"}`
	conv := call(a, first)
	state := first + `,` + weatherToolCall + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`

	const n = 6
	convs := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		gw := a
		if i%2 == 1 {
			gw = b
		}
		wg.Go(func() { convs[i] = call(gw, state+`,{"role":"user","content":"sibling `+string(rune('a'+i))+`"}`) })
	}
	wg.Wait()

	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	continued := 0
	for _, c := range convs {
		if c == conv {
			continued++
			continue
		}
		start, ok := conversationEvents(t, l, c)[0].Payload.(events.ConversationStarted)
		require.True(t, ok)
		assert.Equal(t, conv, start.ForkedFrom, "a sibling forks the conversation at the state it continues")
	}
	assert.Equal(t, 1, continued, "one sibling continues the conversation")
	for _, c := range append([]string{conv}, convs...) {
		verify(t, l, c)
		assert.Empty(t, checkRules(t, l, c), "conversation %s: no finding", c)
	}
}
