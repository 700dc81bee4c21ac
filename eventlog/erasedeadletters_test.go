package eventlog_test

import (
	"context"
	"testing"
	"time"

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

// TestADeadLetterOfAnErasedRequestIsNotStored: a worker that held a
// request's dead letter while the storage was full (or was about to
// store it when the erase came) stored it once the erasure had read the
// dead letters, or freed the space: the request's text, sent before the
// erasure, was back for every client key to read. A dead letter of a
// request the requests stream received before the conversation was
// erased is now refused (ErrConversationErased); one sent after the
// erasure starts the conversation anew and is stored.
func TestADeadLetterOfAnErasedRequestIsNotStored(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "c1", 0, user("c1", "r1", 0, "hello"))
	require.NoError(t, err)
	sent := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	_, err = l.Erase(ctx, "c1")
	require.NoError(t, err)

	err = l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: l.Names().ChatSubject("c1"), Reason: "held while the storage was full",
		Received: sent, RequestSeq: 7, Data: []byte(`{"text":"my private question"}`)})
	assert.ErrorIs(t, err, eventlog.ErrConversationErased)
	left, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, left, "the erased request's dead letter was stored")

	time.Sleep(10 * time.Millisecond)
	require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: l.Names().ChatSubject("c1"), Reason: "the conversation is an app's",
		Received: time.Now().UTC(), RequestSeq: 8, Data: []byte(`{"text":"a new question"}`)}))
	left, err = l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Len(t, left, 1, "a request sent after the erasure is dead-lettered")
}

// TestADeadLetterStoredDuringAnErasureGoes: a worker that found the
// conversation not erased, then stored the dead letter after the erasure
// had read the dead-letters stream, left it there. AddDeadLetter looks
// again once it is stored, and deletes it.
func TestADeadLetterStoredDuringAnErasureGoes(t *testing.T) {
	ctx := context.Background()
	l := openLog(t, natstest.Start(t))
	_, err := l.Append(ctx, "c1", 0, user("c1", "r1", 0, "hello"))
	require.NoError(t, err)
	sent := time.Now().UTC()
	time.Sleep(10 * time.Millisecond)
	erased := false
	t.Cleanup(eventlog.SetDeadLetterChecked(func() {
		if !erased {
			erased = true
			_, err := l.Erase(ctx, "c1")
			require.NoError(t, err)
		}
	}))

	err = l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: l.Names().ChatSubject("c1"), Reason: "the conversation is an app's",
		Received: sent, RequestSeq: 7, Data: []byte(`{"text":"my private question"}`)})
	require.True(t, erased, "the erasure came between the check and the store")
	assert.ErrorIs(t, err, eventlog.ErrConversationErased)
	left, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, left, "the erased request's dead letter stayed")
}
