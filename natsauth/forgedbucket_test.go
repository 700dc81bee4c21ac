package natsauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// TestAWorkerKeyCannotForgeTheThreadingIndex: the gateway's threading
// index was made on first use, so where no gateway had run and nothing
// had been erased a worker key could make its stream with subjects of its
// own choosing: the admin's inbox among them, and the admin's replies were
// stored where the worker reads them (found by the security re-probe).
// The admin's Open now makes the bucket with the others, and a bucket's
// stream that holds subjects turnlog does not make is refused on open,
// saying what to do, never used.
func TestAWorkerKeyCannotForgeTheThreadingIndex(t *testing.T) {
	ctx := context.Background()
	t.Run("made by the admin's Open", func(t *testing.T) {
		srv := natstest.Start(t, natstest.WithAuth())
		admin, err := eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
		require.NoError(t, err)
		_, err = admin.JetStream().Stream(ctx, "KV_"+admin.Names().ThreadsBucket)
		assert.NoError(t, err, "the threading index exists once the admin opened the log")
	})
	t.Run("a forged stream is refused", func(t *testing.T) {
		srv := natstest.Start(t, natstest.WithAuth())
		wc := connectAs(t, srv, natsauth.Worker)
		names := eventlog.NamesFor(eventlog.DefaultPrefix)
		stream := "KV_" + names.ThreadsBucket
		msg, err := wc.nc.Request("$JS.API.STREAM.CREATE."+stream,
			[]byte(`{"name":"`+stream+`","subjects":["$KV.`+names.ThreadsBucket+`.>","_INBOX_admin.>"],"max_msgs_per_subject":1,"storage":"file","num_replicas":1,"allow_direct":true}`), 5*time.Second)
		require.NoError(t, err)
		require.NotContains(t, string(msg.Data), `"error"`, "the worker made the stream: %s", msg.Data)

		_, err = eventlog.Open(ctx, srv.Conn, eventlog.WithLogger(quiet))
		require.Error(t, err, "the admin's Open refuses the forged index")
		assert.Contains(t, err.Error(), "_INBOX_admin.>")
		assert.Contains(t, err.Error(), "nats stream rm "+stream)
		_, err = eventlog.Open(ctx, wc.nc, eventlog.WithLogger(quiet), eventlog.WithWriterRole(string(natsauth.Worker)))
		require.Error(t, err, "a worker's or a gateway's Open refuses it too")
		assert.Contains(t, err.Error(), "_INBOX_admin.>")
	})
}
