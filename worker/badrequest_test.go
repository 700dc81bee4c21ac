package worker_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// failedReason waits for the conversation's last message to end a request
// and returns its request.failed reason ("" if it completed).
func failedReason(t *testing.T, l *eventlog.Log, conv string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		tail, err := l.Last(context.Background(), conv)
		require.NoError(t, err)
		if tail.Closed() {
			for _, e := range tail.Events {
				if p, ok := e.Payload.(events.RequestFailed); ok {
					return p.Reason
				}
			}
			return ""
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("conversation %s never ended its request", conv)
	return ""
}

// TestBadRequestsEndAsRequestFailed: malformed, oversized or inconsistent
// requests end once, as request.failed with a reason that says what was
// wrong, and are not retried.
func TestBadRequestsEndAsRequestFailed(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	js := l.JetStream()
	ctx := context.Background()

	tests := []struct {
		name, conv, body, want string
	}{
		{"not JSON", "bad-json", `{"text": "hi"`, "malformed request"},
		{"unknown field", "bad-field", `{"txt": "hi"}`, "malformed request"},
		{"no text", "bad-empty", `{"text": ""}`, "no text"},
		{"oversized text", "bad-big", `{"text": "` + strings.Repeat("a", worker.DefaultMaxTextBytes+1) + `"}`, "the limit is"},
		{"request ID not a ULID", "bad-id", `{"text": "hi", "request_id": "nope"}`, "not a ULID"},
		{"conversation mismatch", "bad-conv", `{"text": "hi", "conversation": "other"}`, "must match"},
		{"unknown profile", "bad-profile", `{"text": "hi", "profile": "nope"}`, "unknown profile"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := js.Publish(ctx, l.Names().ChatSubject(tc.conv), []byte(tc.body))
			require.NoError(t, err)
			assert.Contains(t, failedReason(t, l, tc.conv), tc.want)
			n := 0
			for rec, err := range l.Events(ctx, tc.conv) {
				require.NoError(t, err)
				n++
				assert.Equal(t, events.TypeRequestFailed, rec.Type, "nothing but the failure is recorded")
			}
			assert.Equal(t, 1, n, "ended once, not retried")
		})
	}

	t.Run("hostile conversation ID is rejected without a trace", func(t *testing.T) {
		// '$' is legal in a NATS subject but not in a conversation ID.
		_, err := js.Publish(ctx, l.Names().ChatSubject("evil$id"), []byte(`{"text":"hi"}`))
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			s, err := js.Stream(ctx, l.Names().RequestsStream)
			require.NoError(t, err)
			info, err := s.Info(ctx)
			require.NoError(t, err)
			return info.State.Msgs == 0
		}, 20*time.Second, 20*time.Millisecond, "the request is terminated, not redelivered forever")
		convs, err := l.Conversations(ctx)
		require.NoError(t, err)
		for _, c := range convs {
			assert.NotContains(t, c.ID, "evil")
		}
	})

	t.Run("a subject with a dot never reaches a worker", func(t *testing.T) {
		_, err := js.Publish(ctx, l.Names().Prefix+".chat.a.b", []byte(`{"text":"hi"}`))
		assert.ErrorIs(t, err, jetstream.ErrNoStreamResponse, "no stream captures it")
	})
}

// TestFailureBeforeTheFirstStepKeepsTheUserText: the user block lands in one
// step with the first model call, so a request that fails before that step
// (here the reasoning guard refuses the Turn) must still record what the
// user asked, next to the reason.
func TestFailureBeforeTheFirstStepKeepsTheUserText(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	ctx := context.Background()
	// An orphan reasoning block: the default profile's guard refuses it.
	orphan := events.New("orphan", "seed", 0, "test", events.ReasoningAppended{BlockID: "r1", Text: "thinking"})
	_, err := l.Append(ctx, "orphan", 0, orphan)
	require.NoError(t, err)

	_, err = worker.Send(ctx, l, worker.Request{Conversation: "orphan", Text: "are you there?"})
	require.NoError(t, err)
	assert.Contains(t, failedReason(t, l, "orphan"), "reasoning block without its follower")

	tail, err := l.Last(ctx, "orphan")
	require.NoError(t, err)
	var types []events.Type
	for _, e := range tail.Events {
		types = append(types, e.Type)
	}
	require.Equal(t, []events.Type{events.TypeUserAppended, events.TypeRequestFailed}, types, "the failure step holds the user's text")
	assert.Equal(t, "are you there?", tail.Events[0].Payload.(events.UserAppended).Text)
	turn, err := l.Load(ctx, "orphan")
	require.NoError(t, err)
	assert.Len(t, turn.Blocks, 2, "the orphan and the user block, nothing else")
}
