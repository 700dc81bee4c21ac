package worker_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/events"
)

// natsCLI finds the nats CLI (.ci/run installs it with go install).
func natsCLI(t *testing.T) string {
	if p, err := exec.LookPath("nats"); err == nil {
		return p
	}
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err == nil {
		p := filepath.Join(string(out[:len(out)-1]), "bin", "nats")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("the nats CLI is not installed; install it with: go install github.com/nats-io/natscli/nats@v0.5.1")
	return ""
}

// TestRequestFromTheNATSCLI: a chat request is plain JSON on a subject, so
// the nats CLI (or any client in any language) can send one; the answer is
// in the conversation's events.
func TestRequestFromTheNATSCLI(t *testing.T) {
	cli := natsCLI(t)
	srv, err := embedded.Start(embedded.Config{DataDir: t.TempDir(), Listen: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	tcpWorker(t, srv.ClientURL())
	l := clientLog(t, srv.ClientURL())

	out, err := exec.Command(cli, "--server", srv.ClientURL(), "pub", "turnlog.chat.from-cli", `{"text": "hello from the nats CLI"}`).CombinedOutput()
	require.NoError(t, err, "nats pub: %s", out)

	var answer string
	require.Eventually(t, func() bool {
		tail, err := l.Last(context.Background(), "from-cli")
		return err == nil && tail.Closed()
	}, 30*time.Second, 20*time.Millisecond)
	for rec, err := range l.Events(context.Background(), "from-cli") {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.LLMTextAppended); ok {
			answer = p.Text
		}
		assert.NotEqual(t, events.TypeRequestFailed, rec.Type)
	}
	assert.Equal(t, "You said: hello from the nats CLI", answer)
}
