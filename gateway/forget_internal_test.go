package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// holds reports whether conv's Turn is cached.
func (c *turnCache) holds(conv string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.byID[conv]
	return ok
}

// An erased conversation leaves a running gateway's memory: its Turn, its
// checker, its entries in the gateway's copy of the threading index and
// the parse cache, on the erasure's announcement, which the gateway
// (running as the worker role) may hear and nothing else disturbs.
func TestErasedConversationLeavesTheGatewaysMemory(t *testing.T) {
	ctx := context.Background()
	s := natstest.Start(t, natstest.WithAuth())
	nc := s.ConnectAs(t, natsauth.Worker)
	l, err := eventlog.Open(ctx, nc, eventlog.WithWriterRole(string(natsauth.Worker)))
	require.NoError(t, err)
	threads, err := l.Threads(ctx)
	require.NoError(t, err)
	g, err := New(Config{Log: l, Connected: nc.IsConnected, Token: "tl-test-token-0123456789", OpenAIUpstream: "http://127.0.0.1:1/v1", Threads: threads})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go g.Run(runCtx)

	lines, err := ReadCalls(strings.NewReader(
		`{"api":"chat.completions","time":"2025-03-01T10:00:00Z","conversation":"secret","request":{"model":"m","messages":[{"role":"user","content":"my account number is 42"}]},`+
			`"response":{"id":"c1","model":"m","choices":[{"message":{"role":"assistant","content":"noted"},"finish_reason":"stop"}]}}`+"\n"+
			`{"api":"chat.completions","time":"2025-03-01T10:00:00Z","conversation":"other","request":{"model":"m","messages":[{"role":"user","content":"hello"}]},`+
			`"response":{"id":"c2","model":"m","choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}}`), 1<<20)
	require.NoError(t, err)
	_, err = g.Recorder().Import(ctx, lines)
	require.NoError(t, err)
	r := g.rec
	require.True(t, r.cache.holds("secret"))
	f := r.checks.Take("secret")
	require.NotNil(t, f, "the conversation's checker is kept")
	r.checks.Put(f)
	_, ok, _ := r.localStore.Get(ctx, "c.secret")
	require.True(t, ok, "the gateway's copy of the index names it")
	require.Positive(t, r.parse.Bytes())

	// Another client's garbage on the subject is ignored.
	require.NoError(t, s.Conn.Publish(l.Names().ErasedSubject(), []byte("not a conversation: *.>")))
	got, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	_, err = got.Erase(ctx, "secret")
	require.NoError(t, err)
	require.Eventually(t, func() bool { return !r.cache.holds("secret") }, 5*time.Second, 10*time.Millisecond, "the Turn is let go")
	assert.Nil(t, r.checks.Take("secret"), "and its checker")
	_, ok, _ = r.localStore.Get(ctx, "c.secret")
	assert.False(t, ok, "and its entries in the gateway's copy of the index")
	assert.Zero(t, r.parse.Bytes(), "and the parse cache, whose items are found by their bytes")
	assert.True(t, r.cache.holds("other"), "another conversation stays")
	_, ok, _ = r.localStore.Get(ctx, "c.other")
	assert.True(t, ok)
}
