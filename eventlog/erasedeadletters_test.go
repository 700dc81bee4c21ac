package eventlog_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestEraseDropsTheConversationsDeadLetters: a dead letter keeps the
// request as it was sent, its text too (a message sent to an app's
// conversation, say), where every client key may read it for 30 days.
// Erasing the conversation erases them; another conversation's (c1x
// shares c1's prefix) and those of no conversation stay.
func TestEraseDropsTheConversationsDeadLetters(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "c1", 0, user("c1", "r1", 0, "hello"))
	require.NoError(t, err)

	letters := []struct {
		subject, text string
	}{
		{l.Names().ChatSubject("c1"), "my private question"},
		{l.Names().ChatSubject("c1x"), "keep me"},
		{l.Names().Prefix + ".chat.*", "no conversation"},
		{l.Names().ChatSubject("c1"), "my second private question"},
	}
	for i, d := range letters {
		require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: d.subject, Reason: "the conversation is an app's",
			RequestSeq: uint64(i + 1), Data: []byte(`{"text":"` + d.text + `"}`)}))
	}

	got, err := l.Erase(ctx, "c1")
	require.NoError(t, err)
	assert.Equal(t, 2, got.DeadLetters, "c1's two dead letters erased")

	left, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	var texts []string
	for _, d := range left {
		texts = append(texts, string(d.Data))
	}
	assert.Equal(t, []string{`{"text":"keep me"}`, `{"text":"no conversation"}`}, texts, "only other conversations' dead letters are left")

	again, err := l.Erase(ctx, "c1")
	require.NoError(t, err)
	assert.Zero(t, again.DeadLetters)
}
