package embedded_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// TestStoreFollowsTheAccount: JetStream keeps an account's streams in a
// directory named after it, so a data directory made before the roles had
// accounts (its streams in the global account's store) would have started
// empty once the roles were in accounts, and one switched to --no-auth
// and back would each time. The store moves to the account in use.
func TestStoreFollowsTheAccount(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	store := func(account string) string { return filepath.Join(dir, server.JetStreamStoreDir, account) }
	steps := []struct {
		name      string
		auth      bool
		account   string
		wantCount uint64
	}{
		{"made without accounts", false, server.DEFAULT_GLOBAL_ACCOUNT, 1},
		{"served with the roles' accounts", true, natsauth.Account, 2},
		{"served without authentication again", false, server.DEFAULT_GLOBAL_ACCOUNT, 3},
	}
	for _, st := range steps {
		var opts []natstest.Option
		if st.auth {
			opts = append(opts, natstest.WithAuth())
		}
		srv := natstest.StartIn(t, dir, opts...)
		js, err := jetstream.New(srv.Conn)
		require.NoError(t, err)
		s, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
		require.NoError(t, err, st.name)
		_, err = js.Publish(ctx, "s.a", []byte(st.name))
		require.NoError(t, err, st.name)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		assert.Equal(t, st.wantCount, info.State.Msgs, "%s: the messages stored before are there", st.name)
		srv.Stop()
		_, err = os.Stat(store(st.account))
		assert.NoError(t, err, "%s: the store is the account's", st.name)
	}
}
