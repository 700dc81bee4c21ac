package embedded_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// publishUntilFull publishes 60 KB messages on a fresh stream until
// JetStream refuses one for want of storage (10023), and returns how many
// it took.
func publishUntilFull(t *testing.T, js jetstream.JetStream, subject string) int {
	t.Helper()
	ctx := context.Background()
	data := []byte(strings.Repeat("d", 60<<10))
	for i := 0; i < 10_000; i++ {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := js.Publish(c, subject, data)
		cancel()
		if err != nil {
			var api *jetstream.APIError
			require.True(t, errors.As(err, &api), "refused by JetStream, not a timeout: %v", err)
			require.Equal(t, jetstream.ErrorCode(10023), api.ErrorCode, "%v", err)
			return i
		}
	}
	t.Fatal("the storage never filled")
	return 0
}

func startWith(t *testing.T, c embedded.Config) (*embedded.Server, jetstream.JetStream) {
	t.Helper()
	srv, err := embedded.Start(c)
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	return srv, js
}

// A raised max_store takes effect while the server runs.
func TestRaiseMaxStore(t *testing.T) {
	srv, js := startWith(t, embedded.Config{DataDir: t.TempDir(), MaxStore: 8 << 20})
	publishUntilFull(t, js, "s.a")
	st, err := srv.Storage()
	require.NoError(t, err)
	assert.Equal(t, int64(8<<20), st.MaxStore)
	assert.GreaterOrEqual(t, st.Used, int64(8<<20))

	require.NoError(t, srv.RaiseMaxStore(16<<20))
	_, err = js.Publish(context.Background(), "s.a", []byte("room again"))
	assert.NoError(t, err)
}

// Issue 24: space freed on a full disk was never used again: JetStream
// kept refusing writes ("insufficient resources") until serve restarted.
// On a small file system the test makes (a tmpfs: needs root), a
// server whose store filled what the disk had takes writes again once
// other files are removed, by itself.
func TestFollowDiskAfterSpaceIsFreed(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "fs")
	require.NoError(t, os.MkdirAll(dir, 0o700))
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=48m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("a small file system needs mount(8) and root: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", dir).Run() })
	// Another program takes most of the disk.
	hog := filepath.Join(dir, "hog")
	require.NoError(t, os.WriteFile(hog, make([]byte, 32<<20), 0o600))

	srv, js := startWith(t, embedded.Config{DataDir: filepath.Join(dir, "data")})
	st, err := srv.Storage()
	require.NoError(t, err)
	assert.Less(t, st.MaxStore, st.DiskFree+st.Used, "the limit stays below what the disk holds")
	publishUntilFull(t, js, "s.a")

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	raised := make(chan int64, 1)
	go srv.FollowDisk(ctx, 50*time.Millisecond, func(_, to int64) {
		select {
		case raised <- to:
		default:
		}
	})
	require.NoError(t, os.Remove(hog))
	select {
	case to := <-raised:
		assert.Greater(t, to, st.MaxStore)
	case <-time.After(30 * time.Second):
		t.Fatal("max_store was not raised after space was freed")
	}
	_, err = js.Publish(context.Background(), "s.a", []byte(strings.Repeat("d", 60<<10)))
	assert.NoError(t, err, "writes pass again without a restart")
}

// Raising the limit of a server with authentication changes nothing else:
// connections stay, with their permissions.
func TestRaiseMaxStoreWithAuth(t *testing.T) {
	srv := natstest.Start(t, natstest.WithAuth(), natstest.WithMaxStore(8<<20))
	client := srv.ConnectAs(t, natsauth.Client)
	js, err := jetstream.New(srv.Conn)
	require.NoError(t, err)
	events := eventlog.NamesFor(eventlog.DefaultPrefix).EventsStream
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: events, Subjects: []string{"e.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	_, err = js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Storage: jetstream.FileStorage})
	require.NoError(t, err)
	publishUntilFull(t, js, "s.a")
	require.NoError(t, srv.RaiseMaxStore(16<<20))
	_, err = js.Publish(context.Background(), "s.a", []byte("room again"))
	assert.NoError(t, err)
	assert.True(t, srv.Conn.IsConnected())
	assert.True(t, client.IsConnected())
	require.NoError(t, client.Publish("s.a", []byte("x")))
	require.NoError(t, client.Flush())
	assert.Error(t, client.LastError(), "the client key still may not publish there")
	// And its account still reaches turnlog's through its imports.
	m, err := client.Request("$JS.API.STREAM.INFO."+events, nil, 10*time.Second)
	require.NoError(t, err)
	assert.Contains(t, string(m.Data), `"name":"`+events+`"`, "the client's stream info is answered from turnlog's account")
}
