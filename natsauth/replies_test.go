package natsauth_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/worker"
)

// TestRepliesOnEventsSubjectsDoNotBlockAConversation: nats-server checks
// the subject a client publishes to, not the reply subject it names. A
// client (read-only role) sends requests it may send (a stream info, a
// status ping, a chat request, a direct get of a stored message) with a
// conversation's events subjects as reply subjects. Its account has no
// streams: the answers come back there and none is stored (before the
// client had an account of its own they were, and eventlog skips them as
// foreign messages: see its tests). The client's next chat request on
// that conversation is answered, and the Turn holds only the steps.
func TestRepliesOnEventsSubjectsDoNotBlockAConversation(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	admin, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	wc := connectAs(t, srv, natsauth.Worker)
	startWorker(t, wc.open(t), wc.nc)
	cc := connectAs(t, srv, natsauth.Client)
	cl := cc.open(t, eventlog.ReadOnly())
	names := cl.Names()

	chat := func(text string) {
		t.Helper()
		turn, err := cl.Load(ctx, "victim")
		require.NoError(t, err, "the client loads the conversation")
		req, err := worker.Send(ctx, cl, worker.Request{Conversation: "victim", Text: text})
		require.NoError(t, err)
		actx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		res, err := worker.Await(actx, cl, "victim", req.RequestID, turn.Seq, turn.Events)
		require.NoError(t, err, "the request %q is answered", text)
		assert.Equal(t, "You said: "+text, res.Answer)
	}
	chat("hello")
	before, err := admin.LastSeq(ctx, "victim")
	require.NoError(t, err)

	// The attack: requests the client may send, answered on the events
	// subjects of the admin and of the workers.
	adminSubj, workerSubj := names.EventsRoleSubject("victim", "admin"), names.EventsRoleSubject("victim", "worker")
	require.NoError(t, cc.nc.PublishRequest("$JS.API.STREAM.INFO."+names.EventsStream, adminSubj, nil))
	require.NoError(t, cc.nc.PublishRequest(names.WorkersPing(), workerSubj, nil))
	require.NoError(t, cc.nc.PublishRequest(names.ChatSubject("elsewhere"), adminSubj, []byte(`{"text":"hi"}`)))
	// And a direct get of a stored step: the server's copy of it, with
	// its Nats-Stream and Nats-Sequence headers.
	direct := "$JS.API.DIRECT.GET." + names.EventsStream
	body := []byte(`{"seq":` + strconv.FormatUint(before, 10) + `}`)
	require.NoError(t, cc.nc.PublishRequest(direct, workerSubj, body))
	// The same on the client's own inbox: once answered, the server has
	// handled those before.
	_, err = cc.nc.Request(direct, body, 10*time.Second)
	require.NoError(t, err)
	cc.assertNoRefusal(t)
	last, err := admin.LastSeq(ctx, "victim")
	require.NoError(t, err)
	assert.Equal(t, before, last, "no answer was stored on the conversation's subjects")

	chat("still there?")

	turn, err := cl.Load(ctx, "victim")
	require.NoError(t, err)
	var texts []string
	for _, b := range turn.Blocks {
		if b.Kind == events.KindUser || b.Kind == events.KindLLMText {
			texts = append(texts, b.Text)
		}
	}
	assert.Equal(t, []string{"hello", "You said: hello", "still there?", "You said: still there?"}, texts)
	foreign := 0
	for _, err := range admin.EventsWithForeign(ctx, "victim") {
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrForeignMessage)
			foreign++
		}
	}
	assert.Zero(t, foreign, "no reply was stored")
}
