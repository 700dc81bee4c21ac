package natsauth_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/templates"
)

// apiRequest sends a raw JetStream API request, as any NATS client with
// the key could, and fails unless the server answers without an error.
func apiRequest(nc *nats.Conn, subject string, body any) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		m, err := nc.RequestWithContext(ctx, subject, data)
		if err != nil {
			return err
		}
		var resp struct {
			Error *jetstream.APIError `json:"error"`
		}
		if err := json.Unmarshal(m.Data, &resp); err != nil {
			return err
		}
		if resp.Error != nil {
			return resp.Error
		}
		return nil
	}
}

// subscribeFor holds a subscription to subject until ctx ends.
func subscribeFor(nc *nats.Conn, subject string) func(ctx context.Context) error {
	return func(ctx context.Context) error {
		sub, err := nc.SubscribeSync(subject)
		if err != nil {
			return err
		}
		defer sub.Unsubscribe()
		<-ctx.Done()
		return ctx.Err()
	}
}

func consumerCreate(stream, name string, cfg map[string]any) map[string]any {
	return map[string]any{"stream_name": stream, "config": cfg}
}

// TestRolesCreateNoConsumersBeyondTheirWork: a stolen client or worker key
// cannot fill the events stream with durable consumers, delete the
// consumers others made, read the snapshot objects through consumers, have
// the server deliver a stream's messages to a subject of its choosing, or
// read the replies meant for another role (issue 24, item 1).
func TestRolesCreateNoConsumersBeyondTheirWork(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth())
	ctx := context.Background()
	admin, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	n := admin.Names()
	_, err = admin.Append(ctx, "victim", 0, userEvent("victim", "r1", 0, "hello"))
	require.NoError(t, err)
	// A consumer someone else made: the live view of another user.
	theirs, err := admin.JetStream().CreateConsumer(ctx, n.EventsStream, jetstream.ConsumerConfig{
		Name: "live_view", FilterSubject: n.EventsSubject("victim"), InactiveThreshold: time.Minute})
	require.NoError(t, err)
	evs := n.EventsStream
	obj := "OBJ_" + n.SnapshotObjectsBucket
	tplSubject := "$KV." + n.TemplatesBucket + ".global"

	cc := connectAs(t, srv, natsauth.Client)
	wc := connectAs(t, srv, natsauth.Worker)

	t.Run("client", func(t *testing.T) {
		for _, tc := range []struct {
			name, subject string
			body          any
		}{
			{"durable consumer on the events stream", "$JS.API.CONSUMER.CREATE." + evs + ".squat1",
				consumerCreate(evs, "squat1", map[string]any{"durable_name": "squat1", "ack_policy": "none"})},
			{"durable consumer on the events stream, filtered form", "$JS.API.CONSUMER.CREATE." + evs + ".squat2." + n.EventsSubject("victim"),
				consumerCreate(evs, "squat2", map[string]any{"durable_name": "squat2", "filter_subject": n.EventsSubject("victim"), "ack_policy": "none"})},
			{"durable consumer, legacy subject", "$JS.API.CONSUMER.DURABLE.CREATE." + evs + ".squat3",
				consumerCreate(evs, "squat3", map[string]any{"durable_name": "squat3", "ack_policy": "none"})},
			{"push consumer delivering events into the templates bucket", "$JS.API.CONSUMER.CREATE." + evs + ".pusher",
				consumerCreate(evs, "pusher", map[string]any{"name": "pusher", "deliver_subject": tplSubject, "ack_policy": "none"})},
			{"ephemeral consumer on the events stream (legacy subject)", "$JS.API.CONSUMER.CREATE." + evs,
				consumerCreate(evs, "", map[string]any{"ack_policy": "none"})},
			{"delete another user's consumer", "$JS.API.CONSUMER.DELETE." + evs + ".live_view", nil},
			{"consumer on the snapshot objects", "$JS.API.CONSUMER.CREATE." + obj + ".peek",
				consumerCreate(obj, "peek", map[string]any{"name": "peek", "ack_policy": "none"})},
			{"consumer on the requests stream", "$JS.API.CONSUMER.CREATE." + n.RequestsStream + ".peek",
				consumerCreate(n.RequestsStream, "peek", map[string]any{"name": "peek", "ack_policy": "none"})},
		} {
			t.Run(tc.name, func(t *testing.T) {
				cc.expectRefused(t, tc.subject, apiRequest(cc.nc, tc.subject, tc.body))
			})
		}
		for _, inbox := range []string{"_INBOX.>", "_INBOX.*.*", natsauth.InboxPrefix(natsauth.Worker) + ".>", natsauth.InboxPrefix(natsauth.Admin) + ".>"} {
			t.Run("read the replies of others on "+inbox, func(t *testing.T) {
				cc.expectRefused(t, `Subscription to "`+inbox+`"`, subscribeFor(cc.nc, inbox))
			})
		}
	})

	t.Run("worker", func(t *testing.T) {
		for _, tc := range []struct {
			name, subject string
			body          any
		}{
			{"consumer on the events stream", "$JS.API.CONSUMER.CREATE." + evs + ".squat",
				consumerCreate(evs, "squat", map[string]any{"durable_name": "squat", "ack_policy": "none"})},
			{"consumer on the snapshot objects", "$JS.API.CONSUMER.CREATE." + obj + ".pusher",
				consumerCreate(obj, "pusher", map[string]any{"name": "pusher", "deliver_subject": tplSubject, "ack_policy": "none"})},
			{"unfiltered consumer on the requests stream", "$JS.API.CONSUMER.CREATE." + n.RequestsStream + ".pusher",
				consumerCreate(n.RequestsStream, "pusher", map[string]any{"name": "pusher", "deliver_subject": tplSubject, "ack_policy": "none"})},
			{"durable consumer, legacy subject", "$JS.API.CONSUMER.DURABLE.CREATE." + n.RequestsStream + ".squat",
				consumerCreate(n.RequestsStream, "squat", map[string]any{"durable_name": "squat", "ack_policy": "explicit"})},
			{"delete another user's consumer", "$JS.API.CONSUMER.DELETE." + evs + ".live_view", nil},
		} {
			t.Run(tc.name, func(t *testing.T) {
				wc.expectRefused(t, tc.subject, apiRequest(wc.nc, tc.subject, tc.body))
			})
		}
		for _, inbox := range []string{"_INBOX.>", natsauth.InboxPrefix(natsauth.Client) + ".>", natsauth.InboxPrefix(natsauth.Admin) + ".>"} {
			t.Run("read the replies of others on "+inbox, func(t *testing.T) {
				wc.expectRefused(t, `Subscription to "`+inbox+`"`, subscribeFor(wc.nc, inbox))
			})
		}
	})

	// Nothing the refused requests asked for exists: the only consumer
	// on the events stream is the one made before, and the template is
	// still the default.
	var names []string
	st, err := admin.JetStream().Stream(ctx, evs)
	require.NoError(t, err)
	lister := st.ConsumerNames(ctx)
	for name := range lister.Name() {
		names = append(names, name)
	}
	require.NoError(t, lister.Err())
	assert.Equal(t, []string{"live_view"}, names)
	_, err = theirs.Info(ctx)
	assert.NoError(t, err, "the other user's consumer is still there")
	g, err := templates.New(admin).Global(ctx)
	require.NoError(t, err)
	assert.True(t, g.Default)
}

// TestClientReadsWithoutConsumers: what chat, replay, export and the live
// view read, a client reads with direct gets alone, large snapshots
// included, each role's replies under its own inbox prefix.
func TestClientReadsWithoutConsumers(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth(), natstest.WithMaxPayload(1<<20))
	ctx := context.Background()
	_, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
	require.NoError(t, err)
	wc := connectAs(t, srv, natsauth.Worker)
	wl := wc.open(t, eventlog.WithSnapshotEvery(1))
	big := strings.Repeat("y", 700<<10)
	var seq uint64
	for step := range 2 {
		seq, err = wl.Append(ctx, "big", seq, userEvent("big", "r1", step, big))
		require.NoError(t, err)
	}
	turn, err := wl.Load(ctx, "big")
	require.NoError(t, err)
	require.NoError(t, wl.SaveSnapshot(ctx, turn, eventlog.StepID("r1", 1)))

	cc := connectAs(t, srv, natsauth.Client)
	cl := cc.open(t, eventlog.ReadOnly())
	at, n, err := cl.SnapshotAt(ctx, "big")
	require.NoError(t, err)
	assert.Equal(t, seq, at, "the client reads the large snapshot")
	assert.Equal(t, 2, n)

	// The live view: what is appended after the watch starts arrives.
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got := make(chan eventlog.Record, 4)
	go func() {
		for rec, err := range cl.Watch(wctx, "big", seq, 2) {
			if err != nil {
				return
			}
			got <- rec
		}
	}()
	time.Sleep(100 * time.Millisecond) // let the watch begin; what it misses it reads anyway
	_, err = wl.Append(ctx, "big", seq, userEvent("big", "r2", 0, "live"))
	require.NoError(t, err)
	select {
	case rec := <-got:
		assert.Equal(t, 3, rec.Pos)
	case <-wctx.Done():
		t.Fatal("the watch saw nothing")
	}
	cancel()
	cc.assertNoRefusal(t)
	wc.assertNoRefusal(t)
}
