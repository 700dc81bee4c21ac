package embedded

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServerStartsDuringAProbe: a server that locks its directory in the
// instant a client command's Running holds the shared lock is not refused.
func TestServerStartsDuringAProbe(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, LockFileName), []byte(`{"pid":1,"nats":"nats://127.0.0.1:4999"}`), 0o600))
	f, err := os.Open(filepath.Join(dir, LockFileName))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, probeFile(f))
	unlocked := make(chan struct{})
	go func() { defer close(unlocked); time.Sleep(50 * time.Millisecond); _ = unlockFile(f) }()
	lock, err := LockDataDir(dir)
	<-unlocked // before f is closed
	require.NoError(t, err)
	lock.Release()
}
