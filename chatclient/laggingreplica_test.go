package chatclient_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/chatclient"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestAskIsNotToldOfAnErasureByAReplicaThatLacksTheConversation: while
// it waits, Ask takes a conversation that holds no message, two reads in
// a row, for one erased under its request. Those reads were direct gets,
// which any replica of the stream answers, and one that lacks the
// conversation (a node catching up after a restart or a partition, as
// the fault matrix's minority partition showed; here a mirror made with
// mirror_direct that copies another conversation only) answers "not
// found": the client said "erased after request ... was sent; it will not
// be answered" of a request a worker then answered. The stream itself
// (its leader) now decides.
func TestAskIsNotToldOfAnErasureByAReplicaThatLacksTheConversation(t *testing.T) {
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	const conv, decoy = "kept", "decoy"
	_, err = admin.Append(ctx, conv, 0, events.New(conv, "r0", 0, "test", events.UserAppended{BlockID: "b0", Text: "earlier"}))
	require.NoError(t, err)
	_, err = admin.Append(ctx, decoy, 0, events.New(decoy, "d0", 0, "test", events.UserAppended{BlockID: "d0", Text: "copied by the mirror"}))
	require.NoError(t, err)

	c, _ := client(t, srv) // no worker yet: the request waits
	chatclient.SetPollEvery(c, 20*time.Millisecond)
	// The mirror comes after Ask read where the conversation ends (it
	// holds a message: an erasure can be told), before its send.
	chatclient.SetBeforeSend(c, func(worker.Request) {
		addLaggingMirror(t, ctx, admin, conv, decoy)
	})
	go func() {
		time.Sleep(3 * time.Second) // about 150 reads of the log
		if ctx.Err() == nil {
			startWorker(t, srv)
		}
	}()
	res, err := ask(t, c, worker.Request{Conversation: conv, Text: "still there?"}, 45*time.Second)
	require.NoError(t, err, "the conversation was never erased")
	require.NotEmpty(t, res.Answer)
}

// addLaggingMirror makes a mirror of conv's events stream, copying
// decoy's messages only, that answers the stream's direct gets
// (mirror_direct): for conv, a replica as far behind as can be. It
// returns once one direct get is the mirror's answer.
func addLaggingMirror(t *testing.T, ctx context.Context, admin *eventlog.Log, conv, decoy string) {
	t.Helper()
	names := admin.Names()
	stream := names.EventsStreamOf(conv)
	require.Equal(t, stream, names.EventsStreamOf(decoy))
	js := admin.JetStream()
	const mirror = "MIRROR_OF_DECOY"
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:         mirror,
		Mirror:       &jetstream.StreamSource{Name: stream, FilterSubject: names.EventsFilter(decoy)},
		MirrorDirect: true,
		Storage:      jetstream.MemoryStorage,
	})
	require.NoError(t, err)
	// The mirror answers the stream's direct gets once it has copied
	// what it mirrors: wait until one is its answer.
	require.NoError(t, natstest.Retry(ctx, 10*time.Second, func(ctx context.Context) error {
		m, err := js.Conn().RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream+"."+names.EventsFilter(decoy), nil)
		if err == nil && m.Header.Get(jetstream.StreamHeader) == mirror {
			return nil
		}
		return fmt.Errorf("no direct get answered by %s yet", mirror)
	}))

}
