package chatclient_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/chatclient"
	_ "github.com/turnlog/turnlog/engine/scripted" // provider "scripted", the default profile's
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// startWorker runs a worker on srv until the test ends; the log it opens
// creates the streams with opts.
func startWorker(t *testing.T, srv *natstest.Server, opts ...eventlog.Option) {
	t.Helper()
	l, err := eventlog.Open(context.Background(), srv.Conn, opts...)
	require.NoError(t, err)
	profiles, err := profile.Load("")
	require.NoError(t, err)
	w, err := worker.New(worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, ShutdownGrace: time.Second,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

// chatInbox is the inbox prefix of the test's chat clients, so that their
// requests can be told from the worker's.
const chatInbox = "_INBOX_chat"

// client connects a chat client of its own to srv, as `turnlog chat` does.
func client(t *testing.T, srv *natstest.Server) (*chatclient.Client, *eventlog.Log) {
	t.Helper()
	nc, err := nats.Connect(srv.ClientURL(), nats.MaxReconnects(-1), nats.CustomInboxPrefix(chatInbox))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	l, err := eventlog.Attach(nc)
	require.NoError(t, err)
	return chatclient.New(nc, l), l
}

func ask(t *testing.T, c *chatclient.Client, req worker.Request, within time.Duration) (worker.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	return c.Ask(ctx, req, nil)
}

// TestAskTouchesOnlyWhatItNeeds records the JetStream API requests of one
// chat: none of them looks up a stream or bucket that sending and waiting
// do not use (with eventlog.Open every chat looked up all of them, so an
// election of any one held every client up).
func TestAskTouchesOnlyWhatItNeeds(t *testing.T) {
	srv := natstest.Start(t)
	startWorker(t, srv)
	c, _ := client(t, srv)

	var mu sync.Mutex
	seen := map[string]bool{}
	sub, err := srv.Conn.Subscribe("$JS.API.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		if strings.HasPrefix(m.Reply, chatInbox) {
			seen[m.Subject] = true
		}
	})
	require.NoError(t, err)
	require.NoError(t, srv.Conn.Flush())
	res, err := ask(t, c, worker.Request{Conversation: "touch", Text: "hello"}, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "You said: hello", res.Answer)
	// As below: the callback may still have copies queued. The watch's
	// direct gets are requests every chat makes.
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["$JS.API.DIRECT.GET.TURNLOG_EVENTS"]
	}, 10*time.Second, 10*time.Millisecond, "the chat did not read its conversation with direct gets")
	require.NoError(t, srv.Conn.Flush())
	require.NoError(t, sub.Unsubscribe())

	mu.Lock()
	defer mu.Unlock()
	var subjects []string
	for s := range seen {
		subjects = append(subjects, s)
		assert.False(t, strings.Contains(s, "KV_") || strings.Contains(s, "OBJ_") || strings.Contains(s, ".STREAM."),
			"the chat looked up something it does not use: %s", s)
		assert.NotContains(t, s, ".CONSUMER.", "a chat creates no consumer (a client may not: see natsauth)")
	}
	sort.Strings(subjects)
	t.Logf("API requests of one chat: %s", strings.Join(subjects, " "))
	assert.NotEmpty(t, subjects, "the test saw no API request at all")

	// What the test would catch: opening the log looks everything up.
	seen = map[string]bool{}
	mu.Unlock()
	sub, err = srv.Conn.Subscribe("$JS.API.>", func(m *nats.Msg) {
		mu.Lock()
		defer mu.Unlock()
		seen[m.Subject] = true
	})
	require.NoError(t, err)
	require.NoError(t, srv.Conn.Flush())
	nc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	defer nc.Close()
	_, err = eventlog.Open(context.Background(), nc)
	require.NoError(t, err)
	// The watcher's callback may run after a flush has returned (the
	// connection reads the copies before the PONG, but hands them to the
	// callback on another goroutine): wait for the lookup rather than
	// unsubscribe and drop what is still queued.
	assert.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return seen["$JS.API.STREAM.INFO.KV_TURNLOG_TEMPLATES"]
	}, 10*time.Second, 10*time.Millisecond, "Open looks up the templates bucket")
	require.NoError(t, sub.Unsubscribe())
	mu.Lock()
}

// TestAskSameRequestIDStoredOnce: a request sent again under its ID is not
// asked twice, whether it already ended (the log holds it: not sent
// again), is still queued within the duplicate window (JetStream drops
// the copy), or is still queued after the window (the copy is stored, and
// the worker finds the request ended when the copy comes).
func TestAskSameRequestIDStoredOnce(t *testing.T) {
	srv := natstest.Start(t)
	// Streams with a 1 s duplicate window, so the test can outlive it.
	_, err := eventlog.Open(context.Background(), srv.Conn, eventlog.WithDuplicateWindow(time.Second))
	require.NoError(t, err)
	c, l := client(t, srv)

	id := ulid.Make().String()
	req := worker.Request{Conversation: "again", RequestID: id, Text: "hello"}
	// No worker yet: no answer, but the request is queued.
	_, err = ask(t, c, req, 500*time.Millisecond)
	var noAnswer *chatclient.NoAnswerError
	require.ErrorAs(t, err, &noAnswer)
	assert.True(t, noAnswer.Sent, "JetStream acknowledged the request")
	assert.Equal(t, id, noAnswer.RequestID)
	assert.Contains(t, err.Error(), id)

	// Within the window: JetStream drops the copy.
	_, err = ask(t, c, req, 300*time.Millisecond)
	require.ErrorAs(t, err, &noAnswer)
	// After the window: the copy is stored.
	time.Sleep(1200 * time.Millisecond)
	_, err = ask(t, c, req, 300*time.Millisecond)
	require.ErrorAs(t, err, &noAnswer)

	startWorker(t, srv)
	res, err := ask(t, c, req, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "You said: hello", res.Answer)
	// The request ended: asking again reads the answer from the log.
	res, err = ask(t, c, req, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "You said: hello", res.Answer)
	// A later request, then the first one once more, after its window.
	_, err = ask(t, c, worker.Request{Conversation: "again", Text: "next"}, 30*time.Second)
	require.NoError(t, err)
	time.Sleep(1200 * time.Millisecond)
	res, err = ask(t, c, req, 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, "You said: hello", res.Answer)

	// Let the worker drain whatever copies were queued, then count.
	require.Eventually(t, func() bool {
		info, err := l.JetStream().Stream(context.Background(), l.Names().RequestsStream)
		return err == nil && info.CachedInfo().State.Msgs == 0
	}, 30*time.Second, 50*time.Millisecond, "the queued copies are consumed")
	users, ends := 0, 0
	for rec, err := range l.Events(context.Background(), "again") {
		require.NoError(t, err)
		if rec.Cause != id {
			continue
		}
		switch rec.Type {
		case events.TypeUserAppended:
			users++
		case events.TypeRequestCompleted, events.TypeRequestFailed:
			ends++
		}
	}
	assert.Equal(t, 1, users, "the request's user block is stored once")
	assert.Equal(t, 1, ends, "the request ends once")
}

// TestAskNamesAServerWithoutStreams: against a server where no worker has
// created turnlog's streams, chat says so instead of retrying until its
// deadline.
func TestAskNamesAServerWithoutStreams(t *testing.T) {
	srv := natstest.Start(t)
	c, _ := client(t, srv)
	begin := time.Now()
	_, err := ask(t, c, worker.Request{Conversation: "nothing", Text: "hello"}, time.Minute)
	require.Error(t, err)
	var noAnswer *chatclient.NoAnswerError
	assert.False(t, errors.As(err, &noAnswer), "a missing stream is an answer, not a timeout: %v", err)
	assert.Contains(t, err.Error(), "no stream TURNLOG_")
	assert.Less(t, time.Since(begin), time.Minute/2, "named long before the deadline")
}

// TestNoDeltaAfterAskReturns floods the request's delta subject while it is
// answered: once Ask has returned, no onDelta call may still be running or
// start (the CLI writes the newline after an answer to the same terminal,
// and the race detector saw the two writes overlap).
func TestNoDeltaAfterAskReturns(t *testing.T) {
	srv := natstest.Start(t)
	startWorker(t, srv)
	c, l := client(t, srv)
	for range 5 {
		id := ulid.Make().String()
		stop := make(chan struct{})
		flooded := make(chan struct{})
		go func() {
			defer close(flooded)
			data := []byte(`{"request_id":"` + id + `","kind":"llm.text","text":"x"}`)
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = srv.Conn.Publish(l.Names().DeltaSubject("flood"), data)
			}
		}()
		var returned, late atomic.Bool
		_, err := c.Ask(context.Background(), worker.Request{Conversation: "flood", RequestID: id, Text: "hi"}, func(worker.Delta) {
			time.Sleep(time.Millisecond)
			if returned.Load() {
				late.Store(true)
			}
		})
		returned.Store(true)
		require.NoError(t, err)
		time.Sleep(20 * time.Millisecond)
		close(stop)
		<-flooded
		assert.False(t, late.Load(), "an onDelta call ran after Ask returned")
	}
}

// TestAskSaysTheConversationWasErased: a request whose conversation is
// erased while it waits (the erasure removes the request too) was waited
// for until the timeout, and the sender told it "may still be answered":
// it never will be. Ask now says the conversation was erased.
func TestAskSaysTheConversationWasErased(t *testing.T) {
	srv := natstest.Start(t)
	admin, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	_, err = admin.Append(context.Background(), "gone", 0, events.New("gone", "r0", 0, "test", events.UserAppended{BlockID: "b0", Text: "earlier"}))
	require.NoError(t, err)
	c, _ := client(t, srv) // no worker: the request waits
	go func() {
		time.Sleep(500 * time.Millisecond)
		_, _ = admin.Erase(context.Background(), "gone")
	}()
	_, err = ask(t, c, worker.Request{Conversation: "gone", Text: "anyone?"}, 30*time.Second)
	require.ErrorIs(t, err, chatclient.ErrErased)
	assert.ErrorContains(t, err, "will not be answered")
}

// TestAskRefusesAnAppsConversation: turnlog chat into a conversation the
// recording gateway records from an app's calls is refused before
// anything is sent (see worker.ErrAppsConversation): the worker's answer
// would land in the app's record. Nothing is queued.
func TestAskRefusesAnAppsConversation(t *testing.T) {
	srv := natstest.Start(t)
	startWorker(t, srv)
	c, l := client(t, srv)
	ctx := context.Background()
	const app = "app-chat"
	writer, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	seq, err := writer.Append(ctx, app, 0, events.New(app, "call-1", 0, calls.Actor, events.UserAppended{BlockID: "u1", Text: "hello"}))
	require.NoError(t, err)

	_, err = ask(t, c, worker.Request{Conversation: app, Text: "typed by hand"}, 30*time.Second)
	require.ErrorIs(t, err, worker.ErrAppsConversation)
	assert.Contains(t, err.Error(), "turnlog fork "+app)
	after, err := l.LastSeq(ctx, app)
	require.NoError(t, err)
	assert.Equal(t, seq, after, "nothing was written into the app's record")
	reqs, err := writer.JetStream().Stream(ctx, writer.Names().RequestsStream)
	require.NoError(t, err)
	info, err := reqs.Info(ctx, jetstream.WithSubjectFilter(writer.Names().ChatSubject(app)))
	require.NoError(t, err)
	assert.Zero(t, info.State.Msgs, "no request was queued")
}

// TestAskSaysWhenItsRequestIsDeadLettered: the app's next call can land
// between Ask's look at the conversation and its send. The worker then
// keeps the request as a dead letter, and Ask waited out its whole
// deadline ("no answer"); it now says, at its next look at the log, that
// the request was dead-lettered and why.
func TestAskSaysWhenItsRequestIsDeadLettered(t *testing.T) {
	srv := natstest.Start(t)
	startWorker(t, srv)
	c, l := client(t, srv)
	ctx := context.Background()
	const app = "app-race"
	chatclient.SetBeforeSend(c, func(worker.Request) {
		_, err := l.Append(ctx, app, 0, events.New(app, "call-1", 0, calls.Actor, events.UserAppended{BlockID: "u1", Text: "the app's call"}))
		require.NoError(t, err)
	})
	start := time.Now()
	_, err := ask(t, c, worker.Request{Conversation: app, Text: "typed by hand"}, time.Minute)
	require.ErrorIs(t, err, chatclient.ErrDeadLettered)
	assert.Contains(t, err.Error(), "the conversation is an app's")
	assert.Less(t, time.Since(start), 30*time.Second, "said long before the deadline")
	after, err := l.LastSeq(ctx, app)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), after, "nothing was written into the app's record")
}

// TestAskFindsADeadLetterStoredBeforeItLooks: Ask read where the
// dead-letters stream ended beside its send, and followed only what came
// after: a dead letter stored before that read finished (a worker quicker
// than the read; or the first send of a request re-sent within the
// duplicate window, which JetStream drops) was never looked at, and Ask
// waited out its deadline. Its first look now goes back the duplicate
// window, and the request's dead letter is found by its ID. Here the
// request is dead-lettered before Ask's own send, which JetStream drops as
// a duplicate.
func TestAskFindsADeadLetterStoredBeforeItLooks(t *testing.T) {
	srv := natstest.Start(t)
	startWorker(t, srv)
	c, l := client(t, srv)
	ctx := context.Background()
	const app = "app-first"
	chatclient.SetBeforeSend(c, func(req worker.Request) {
		_, err := l.Append(ctx, app, 0, events.New(app, "call-1", 0, calls.Actor, events.UserAppended{BlockID: "u1", Text: "the app's call"}))
		require.NoError(t, err)
		_, err = worker.Send(ctx, l, req) // the same request, sent first
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			n, err := l.DeadLetterCount(ctx)
			return err == nil && n == 1
		}, 20*time.Second, 10*time.Millisecond, "dead-lettered before Ask sends")
	})
	start := time.Now()
	_, err := ask(t, c, worker.Request{Conversation: app, Text: "typed by hand"}, time.Minute)
	require.ErrorIs(t, err, chatclient.ErrDeadLettered)
	assert.Contains(t, err.Error(), "the conversation is an app's")
	assert.Less(t, time.Since(start), 30*time.Second, "said long before the deadline")
}
