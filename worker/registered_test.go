package worker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// actorReminder is the actor of test.reminder's events.
const actorReminder = "test.reminder"

// test.reminder is a middleware of a program's own, registered as a
// program would: it puts its reminder right before the conversation's
// first user message, once (block.inserted, through
// middlewares.InsertBlock), and leaves it there on every later call.
func init() {
	profile.RegisterMiddleware("test.reminder", func(s profile.MiddlewareSpec) (engine.Middleware, error) {
		var opts struct {
			Text string `yaml:"text"`
		}
		if err := s.Options.Decode(&opts); err != nil {
			return nil, err
		}
		if opts.Text == "" {
			return nil, errors.New("options: text is required")
		}
		return func(next engine.Handler) engine.Handler {
			return func(ctx context.Context, tx *engine.Tx) error {
				first := -1
				for i, b := range tx.Turn().Blocks {
					if b.Meta["reminder"] == "1" {
						return next(ctx, tx)
					}
					if b.Kind == events.KindUser && first < 0 {
						first = i
					}
				}
				if first >= 0 {
					b := events.Block{Kind: events.KindOther, Text: opts.Text, Trust: events.Trusted, Meta: map[string]string{"reminder": "1"}}
					if err := middlewares.InsertBlock(tx, actorReminder, first, b, "reminder before the first message"); err != nil {
						return err
					}
				}
				return next(ctx, tx)
			}
		}, nil
	})
}

const reminderProfiles = `profiles:
  default:
    system_prompt: You count words.
    middlewares: [logging, test.reminder, systemprompt, ordering, reasoningguard]
    options:
      test.reminder: {text: "Reminder: answer in one line."}
`

func withReminder(t *testing.T) func(*worker.Config) {
	set, err := profile.Parse([]byte(reminderProfiles))
	require.NoError(t, err)
	return func(c *worker.Config) { c.Profiles = set }
}

// reminders counts test.reminder's insertions in conv.
func reminders(t *testing.T, l *eventlog.Log, conv string) int {
	n := 0
	for rec, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		if rec.Type == events.TypeBlockInserted && rec.Actor == actorReminder {
			n++
		}
	}
	return n
}

// TestRegisteredMiddlewareUnderLoad: a middleware registered by the test
// runs in workers under load as a built-in does: each conversation's
// requests once, in order, never interleaved (checkLog, as
// TestOrderingUnderLoad), and its change recorded once per conversation.
func TestRegisteredMiddlewareUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("200 requests")
	}
	srv := natstest.Start(t)
	var l *eventlog.Log
	for i := 0; i < 2; i++ {
		l = startWorker(t, srv, withReminder(t))
	}
	sent := sendAll(t, l, "mine", 20, 10, chatText)
	waitDone(t, l, sent, 3*time.Minute)
	checkLog(t, l, sent)
	for conv := range sent {
		assert.Equal(t, 1, reminders(t, l, conv), "%s: the reminder is inserted once", conv)
		turn, err := l.Load(context.Background(), conv)
		require.NoError(t, err)
		assert.Equal(t, "Reminder: answer in one line.", turn.Blocks[1].Text, "%s: after the system prompt, before the first message", conv)
	}
}

// TestRegisteredMiddlewareResumesAfterACrash: the crash points of
// TestCrashAtEveryPointLosesAndDuplicatesNothing, with the registered
// middleware in the chain.
func TestRegisteredMiddlewareResumesAfterACrash(t *testing.T) {
	for _, tc := range []struct {
		name  string
		point string
		n     int
	}{
		{"before the reminder and the model call land", "step", 1},
		{"between the tool call and its result", "step", 3},
		{"after the last event, before the ack", "completed", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			crash := &crashOnce{point: tc.point, n: tc.n}
			tweak := withReminder(t)
			l := startWorker(t, natstest.Start(t), func(c *worker.Config) {
				tweak(c)
				c.Fault = crash.fault
				c.AckWait = time.Second
			})
			res, err := ask(t, l, "c", "count the words in one two three four")
			require.NoError(t, err)
			assert.Equal(t, `There are 4 words in "one two three four".`, res.Answer)
			require.Eventually(t, crash.hasFired, 10*time.Second, 10*time.Millisecond, "the fault point was reached")
			require.Eventually(t, func() bool { return pending(t, l) == 0 }, 20*time.Second, 20*time.Millisecond, "the request is acknowledged in the end")

			counts := map[events.Type]int{}
			for rec, err := range l.Events(context.Background(), "c") {
				require.NoError(t, err)
				counts[rec.Type]++
			}
			assert.Equal(t, 1, counts[events.TypeUserAppended], "one user block")
			assert.Equal(t, 1, counts[events.TypeBlockInserted], "one reminder")
			assert.Equal(t, 1, counts[events.TypeToolResult], "one tool result")
			assert.Equal(t, 1, counts[events.TypeRequestCompleted], "completed once")
		})
	}
}

// TestServe: a program's own loop serves requests through Worker.Serve,
// with the registered middleware, and gets the log's outcome.
func TestServe(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	cfg := worker.Config{Log: l, Conn: srv.Conn}
	withReminder(t)(&cfg)
	w, err := worker.New(cfg) // no Run: the program has its own loop
	require.NoError(t, err)

	id := engine.NewID()
	req := worker.Request{Conversation: "own-loop", RequestID: id, Text: "count words in one two three"}
	got, err := w.Serve(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, worker.Served{Completed: true, ModelCalls: 2}, got, "a tool call, then the answer")
	turn, err := l.Load(ctx, "own-loop")
	require.NoError(t, err)
	assert.Equal(t, `There are 3 words in "one two three".`, turn.Blocks[len(turn.Blocks)-1].Text)
	assert.Equal(t, 1, reminders(t, l, "own-loop"))

	again, err := w.Serve(ctx, req)
	require.NoError(t, err)
	assert.Equal(t, got, again, "the same request again: its outcome, not a second run")
	seq, err := l.LastSeq(ctx, "own-loop")
	require.NoError(t, err)
	assert.Equal(t, turn.Seq, seq, "nothing appended")

	failed, err := w.Serve(ctx, worker.Request{Conversation: "own-loop", RequestID: engine.NewID(), Text: "hi", Profile: "nope"})
	require.NoError(t, err)
	assert.False(t, failed.Completed)
	assert.Contains(t, failed.Reason, `unknown profile "nope"`)

	_, err = w.Serve(ctx, worker.Request{Conversation: "own-loop", Text: "hi"})
	assert.ErrorIs(t, err, worker.ErrNoRequestID)
	_, err = w.Serve(ctx, worker.Request{Conversation: "a.b", RequestID: engine.NewID(), Text: "hi"})
	assert.ErrorContains(t, err, "NATS subjects forbid")
}
