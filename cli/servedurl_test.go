package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/natsconn"
)

// TestCommandsFindServeOnItsPort reproduces an adopter's report: `turnlog
// serve --listen` on any port but 4222 wrote its address into the data
// directory's turnlog.lock, yet `turnlog ls` in the same directory, with
// no --nats-url, went to nats://127.0.0.1:4222 and failed. Commands run
// where serve keeps its data must find it on whatever port it listens.
func TestCommandsFindServeOnItsPort(t *testing.T) {
	s := startServe(t) // on a random port, never 4222
	require.NotEqual(t, natsconn.DefaultURL, s.natsURL)

	out, code := runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "ls")
	assert.Equal(t, 0, code, "ls with no --nats-url beside serve on %s: %s", s.natsURL, out)
	assert.NotContains(t, out, "4222")

	out, code = runCmd(t, nil, "", "status", "--data", s.data)
	assert.Equal(t, 0, code, "status --data beside serve on %s: %s", s.natsURL, out)

	// What the user names still wins over the lock file.
	out, code = runCmd(t, []string{"TURNLOG_DATA=" + s.data, "TURNLOG_NATS_URL=nats://127.0.0.1:1"}, "", "ls")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "nats://127.0.0.1:1")
	out, code = runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", "ls", "--nats-url", "nats://127.0.0.1:1")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, "nats://127.0.0.1:1")
}

// TestStaleLockFileIsNotFollowed: a server that was killed leaves its
// address in turnlog.lock but no lock; commands must not take the address
// of a process that is gone (another server, not this directory's, may
// listen there since).
func TestStaleLockFileIsNotFollowed(t *testing.T) {
	other := startServe(t) // a live server, of another data directory
	data := t.TempDir()
	stale := `{"pid":` + strconv.Itoa(os.Getpid()) + `,"nats":"` + other.natsURL + `"}` + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(data, embedded.LockFileName), []byte(stale), 0o600))

	out, code := runCmd(t, []string{"TURNLOG_DATA=" + data}, "", "ls")
	assert.NotEqual(t, 0, code, out)
	assert.Contains(t, out, natsconn.DefaultURL, "no server holds %s: the default address", data)
	assert.NotContains(t, out, other.natsURL)
}
