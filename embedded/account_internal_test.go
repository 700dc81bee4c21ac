package embedded

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTwoStoresAreLeftAndSaid: a data directory whose streams were moved
// to the account in use, and then written to in the global account's
// store again (an older turnlog), holds two stores. Neither is moved or
// deleted; the operator is told which one the server opens. Before, the
// other's streams were passed over without a word.
func TestTwoStoresAreLeftAndSaid(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join(dir, server.JetStreamStoreDir)
	for _, p := range []string{filepath.Join(root, server.DEFAULT_GLOBAL_ACCOUNT, "streams", "TURNLOG_EVENTS"), filepath.Join(root, "TURNLOG", "streams", "TURNLOG_EVENTS")} {
		require.NoError(t, os.MkdirAll(p, 0o700))
	}
	var said []string
	c := Config{DataDir: dir, Users: []*server.NkeyUser{{Nkey: "U"}}, Accounts: []*server.Account{server.NewAccount("TURNLOG")},
		StreamsAccount: "TURNLOG", Warn: func(s string) { said = append(said, s) }}
	require.NoError(t, c.moveStore())
	require.Len(t, said, 1)
	assert.Contains(t, said[0], filepath.Join(root, server.DEFAULT_GLOBAL_ACCOUNT))
	assert.Contains(t, said[0], "Nothing is moved or deleted")
	for _, acc := range []string{server.DEFAULT_GLOBAL_ACCOUNT, "TURNLOG"} {
		_, err := os.Stat(filepath.Join(root, acc, "streams", "TURNLOG_EVENTS"))
		assert.NoError(t, err, "the store of %s is where it was", acc)
	}
}
