package embedded_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
)

// TestSecondServerOnADirectoryIsRefused: one server per data directory
// (issue 23, item 1); the refusal names the holder, and the directory is
// free again once the holder shut down.
func TestSecondServerOnADirectoryIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	require.NoError(t, err)

	second, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	if second != nil {
		second.Shutdown()
	}
	require.Error(t, err, "a second server on the same directory")
	assert.True(t, errors.Is(err, embedded.ErrLocked), "%v", err)
	var locked *embedded.LockedError
	require.ErrorAs(t, err, &locked)
	assert.Equal(t, embedded.Holder{PID: os.Getpid(), NATS: first.ClientURL()}, locked.Holder)
	assert.Contains(t, err.Error(), dir)
	assert.Contains(t, err.Error(), "PID "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, err.Error(), first.ClientURL())

	_, err = embedded.LockDataDir(dir)
	assert.ErrorIs(t, err, embedded.ErrLocked, "a bare lock is refused too")

	first.Shutdown()
	again, err := embedded.Start(embedded.Config{DataDir: dir})
	require.NoError(t, err, "free once the first shut down")
	again.Shutdown()
}

// TestStartUsesTheCallersLock: a caller that locked the directory first
// (serve, before it writes keys there) hands the lock to Start, which
// releases it on Shutdown; a lock on another directory is refused.
func TestStartUsesTheCallersLock(t *testing.T) {
	dir := t.TempDir()
	lock, err := embedded.LockDataDir(dir)
	require.NoError(t, err)
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Lock: lock})
	require.NoError(t, err)
	_, err = embedded.LockDataDir(dir)
	assert.ErrorIs(t, err, embedded.ErrLocked)
	srv.Shutdown()
	lock, err = embedded.LockDataDir(dir)
	require.NoError(t, err, "released by Shutdown")

	_, err = embedded.Start(embedded.Config{DataDir: t.TempDir(), Lock: lock})
	assert.ErrorContains(t, err, "not on the data directory")
	lock, err = embedded.LockDataDir(dir)
	require.NoError(t, err, "a failed Start releases the lock it was given")
	lock.Release()
}

// TestBusyPortIsNamedAtOnce: a listen address another server holds is an
// error that names it, not a 10 s wait for a server that never gets ready.
func TestBusyPortIsNamedAtOnce(t *testing.T) {
	first, err := embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(first.Shutdown)
	busy := strings.TrimPrefix(first.ClientURL(), "nats://")

	_, err = embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: busy})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cannot listen on "+busy)
	assert.NotContains(t, err.Error(), "not ready after")
}

// TestRunningTrustsOnlyAHeldLock: Running names the server of a directory
// while it runs, and nothing once it stopped or when only a dead
// process's details are left in the file; it creates nothing.
func TestRunningTrustsOnlyAHeldLock(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none")
	_, ok := embedded.Running(missing)
	assert.False(t, ok, "no directory")
	assert.NoDirExists(t, missing, "Running creates nothing")

	dir := filepath.Join(t.TempDir(), "data")
	srv, err := embedded.Start(embedded.Config{DataDir: dir, Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	h, ok := embedded.Running(dir)
	assert.True(t, ok, "a running server")
	assert.Equal(t, embedded.Holder{PID: os.Getpid(), NATS: srv.ClientURL()}, h)
	srv.Shutdown()
	_, ok = embedded.Running(dir)
	assert.False(t, ok, "a stopped server")

	// What a killed server leaves: its details, no lock.
	stale := `{"pid":1,"nats":"nats://127.0.0.1:4999"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, embedded.LockFileName), []byte(stale), 0o600))
	_, ok = embedded.Running(dir)
	assert.False(t, ok, "a stale lock file")

	// Running's probe does not keep a server out.
	lock, err := embedded.LockDataDir(dir)
	require.NoError(t, err, "free after Running")
	lock.Release()
}
