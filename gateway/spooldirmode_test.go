package gateway_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestSpoolInADirectoryOthersControlIsRefused: every file of the spool is
// a call the gateway records, as the worker role, once NATS is back. A
// spool directory that other users may write (--spool-dir /tmp/spool,
// made beforehand by someone else) would let them put calls of their own
// there, or take the gateway's away, without a credential: the gateway
// refuses it before it writes anything there, and opens it once it is
// the owner's alone.
func TestSpoolInADirectoryOthersControlIsRefused(t *testing.T) {
	l, err := eventlog.Open(t.Context(), natstest.Start(t).Conn)
	require.NoError(t, err)
	threads, err := l.Threads(t.Context())
	require.NoError(t, err)
	open := func(dir string) error {
		_, err := gateway.New(gateway.Config{Log: l, Connected: func() bool { return true }, Token: token,
			OpenAIUpstream: "http://127.0.0.1:9/v1", Threads: threads, RecordOptional: true, SpoolDir: dir,
			Logger: slog.New(slog.DiscardHandler)})
		return err
	}
	cases := []struct {
		name  string
		mode  os.FileMode
		owner int // -1: this process's user
	}{
		{name: "every user may write", mode: 0o777, owner: -1},
		{name: "sticky, every user may write", mode: 0o777 | os.ModeSticky, owner: -1},
		{name: "another user's", mode: 0o700, owner: 4242},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.owner >= 0 && os.Getuid() != 0 {
				t.Skip("only root can give a directory to another user")
			}
			dir := filepath.Join(t.TempDir(), "spool")
			require.NoError(t, os.Mkdir(dir, 0o700))
			require.NoError(t, os.Chmod(dir, tc.mode))
			if tc.owner >= 0 {
				require.NoError(t, os.Chown(dir, tc.owner, tc.owner))
			}
			err := open(dir)
			require.Error(t, err)
			assert.ErrorContains(t, err, dir, "the error names the directory")
			_, statErr := os.Stat(filepath.Join(dir, "lock"))
			assert.True(t, os.IsNotExist(statErr), "nothing is written there")
		})
	}

	t.Run("the owner's alone opens", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "spool")
		require.NoError(t, os.Mkdir(dir, 0o750))
		assert.NoError(t, open(dir))
		assert.NoError(t, open(filepath.Join(t.TempDir(), "made", "by", "the gateway")))
	})
}
