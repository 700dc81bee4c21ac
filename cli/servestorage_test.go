package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/storagetest"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/worker"
)

// smallDisk mounts a tmpfs of size bytes for the test (root only) and
// returns its path.
func smallDisk(t *testing.T, size string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a small file system needs mount(8) and root: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	return dir
}

// Issue 24: on a 20 MiB disk serve refused to start ("insufficient storage
// resources available"): its streams reserve 1.25 GiB. It starts, and
// says what it may store and what it reserves; on a disk too small for
// anything it says what it needs and what to do.
func TestServeOnSmallDisk(t *testing.T) {
	s := startServeIn(t, filepath.Join(smallDisk(t, "20m"), "data"))
	out := s.out.String()
	assert.Contains(t, out, "JetStream storage: up to ")
	assert.Contains(t, out, "reserved (pending requests up to ")
	assert.Contains(t, out, "free on its disk")

	tiny := smallDisk(t, "4m")
	root := newRootCmd()
	var buf strings.Builder
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs([]string{"serve", "--data", filepath.Join(tiny, "data"), "--listen", "127.0.0.1:0", "--http", ""})
	err := root.ExecuteContext(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "turnlog needs at least 8.0 MiB")
	assert.Contains(t, err.Error(), "--max-store")
}

// --max-store sets the limit; too small a one is refused with the minimum.
func TestServeMaxStore(t *testing.T) {
	s := startServe(t, "--max-store", "16MiB")
	assert.Contains(t, s.out.String(), "JetStream storage: up to 16.0 MiB")
	assert.Contains(t, s.out.String(), "(--max-store)")

	root := newRootCmd()
	var buf strings.Builder
	root.SetOut(&buf)
	root.SetErr(&buf)
	root.SetArgs([]string{"serve", "--data", t.TempDir(), "--max-store", "1MiB", "--listen", "127.0.0.1:0", "--http", ""})
	err := root.ExecuteContext(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--max-store 1.0 MiB: turnlog needs at least 8.0 MiB")
}

// Issue 24: with the storage full and a request in a worker's hands, serve
// stops when told to (SIGTERM cancels the same context; a full disk once
// needed SIGKILL), and a serve with more room answers the request.
func TestServeStopsWithFullStorage(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	s := startServeIn(t, data, "--max-store", "8MiB")
	key, err := nats.NkeyOptionFromSeed(natsauth.KeyFile(natsauth.Dir(data), natsauth.Admin))
	require.NoError(t, err)
	nc, err := nats.Connect(s.natsURL, key)
	require.NoError(t, err)
	defer nc.Close()
	ctx := context.Background()
	l, err := eventlog.Open(ctx, nc)
	require.NoError(t, err)

	// Fill the storage, then free one step's worth: a 60 KB request still
	// fits, and then nothing more.
	stored, _ := storagetest.Fill(t, l)
	storagetest.Free(t, l, uint64(stored-1))
	req, err := worker.Send(ctx, l, worker.Request{Conversation: "held", Text: strings.Repeat("h", 60<<10)})
	require.NoError(t, err, "accepted while there was room")

	// The worker holds it: delivered, not acknowledged.
	rs, err := l.JetStream().Stream(ctx, l.Names().RequestsStream)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		pending := 0
		for c := range rs.ListConsumers(ctx).Info() {
			pending += c.NumAckPending
		}
		return pending == 1
	}, 30*time.Second, 50*time.Millisecond)
	time.Sleep(2 * time.Second) // a few refused attempts
	_, err = l.LastSeq(ctx, "held")
	require.NoError(t, err)
	nc.Close()

	s.stop() // fails the test if serve takes more than 30 s

	s = startServeIn(t, data, "--max-store", "64MiB")
	nc2, err := nats.Connect(s.natsURL, key)
	require.NoError(t, err)
	defer nc2.Close()
	l2, err := eventlog.Open(ctx, nc2)
	require.NoError(t, err)
	wctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	res, err := worker.Await(wctx, l2, "held", req.RequestID, 0, 0)
	require.NoError(t, err, "the held request is answered once there is room")
	assert.Equal(t, "You said: "+strings.Repeat("h", 60<<10), res.Answer)
}

// `turnlog status` shows the storage used and free, the limit serve set
// and the disk's free space.
func TestStatusShowsStorage(t *testing.T) {
	s := startServe(t, "--max-store", "16MiB")
	env := []string{"TURNLOG_DATA=" + s.data, "TURNLOG_NATS_URL=" + s.natsURL}
	out, code := runCmd(t, env, "", "status")
	require.Equal(t, 0, code, out)
	assert.Regexp(t, `storage: [0-9.]+ [KMG]?i?B used of 16\.0 MiB, [0-9.]+ MiB free \([0-9.]+ MiB reserved\); [0-9.]+ [KMGT]iB free on the disk`, out)

	out, code = runCmd(t, env, "", "status", "--json")
	require.Equal(t, 0, code, out)
	var st struct {
		Storage struct {
			Used     int64 `json:"used"`
			MaxStore int64 `json:"max_store"`
			Free     int64 `json:"free"`
			DiskFree int64 `json:"disk_free"`
		} `json:"storage"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	assert.Equal(t, int64(16<<20), st.Storage.MaxStore)
	assert.Equal(t, st.Storage.MaxStore-st.Storage.Used, st.Storage.Free)
	assert.Positive(t, st.Storage.DiskFree)
}
