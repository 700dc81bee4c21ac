package replay_test

import (
	"context"
	"iter"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// countingSource counts the histories read, by conversation.
type countingSource struct {
	l     *eventlog.Log
	mu    sync.Mutex
	reads map[string]int
}

func (s *countingSource) Events(ctx context.Context, conv string) iter.Seq2[eventlog.Record, error] {
	s.mu.Lock()
	s.reads[conv]++
	s.mu.Unlock()
	return s.l.Events(ctx, conv)
}

// TestDescriptionsReadOnlyWhatChanged: a long-running lister (GET
// /conversations?findings=true) describes every matching conversation;
// Descriptions gives the counts Describe gives, and reads a history again
// only after the conversation changed.
func TestDescriptionsReadOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	_, loop := defaultLoop(t)
	clean := newConvo(t, l, "clean")
	clean.request(loop, "hello", nil)
	flawed := newConvo(t, l, "flawed")
	flawed.request(loop, "hello", nil)
	flawed.operator("app.prompt", events.SystemPromptSet{BlockID: "second", Text: "Also be brief.", Index: len(flawed.turn.Blocks)})
	flawed.request(loop, "hello again", nil)

	src := &countingSource{l: l, reads: map[string]int{}}
	d := replay.NewDescriptions(100)
	describe := func() map[string]replay.Conversation {
		t.Helper()
		cs, err := replay.Newest(ctx, l, nil)
		require.NoError(t, err)
		require.NoError(t, d.Describe(ctx, src, cs))
		out := map[string]replay.Conversation{}
		for _, c := range cs {
			want := c
			require.NoError(t, replay.Describe(ctx, l, &want))
			assert.Equal(t, want, c, "%s: the counts Describe reads", c.ID)
			out[c.ID] = c
		}
		return out
	}
	got := describe()
	assert.Zero(t, got["clean"].Findings)
	assert.Equal(t, 1, got["flawed"].Findings)
	assert.Equal(t, map[string]int{"clean": 1, "flawed": 1}, src.reads)

	describe()
	assert.Equal(t, map[string]int{"clean": 1, "flawed": 1}, src.reads, "nothing changed: nothing read again")

	clean.request(loop, "hello again", nil)
	got = describe()
	assert.Equal(t, map[string]int{"clean": 2, "flawed": 1}, src.reads, "only the conversation that changed is read again")
	assert.Equal(t, 2, got["clean"].ModelCalls)
}
