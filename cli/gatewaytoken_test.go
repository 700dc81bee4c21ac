package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/natsauth"
)

// TestGatewayRefusesATokenFileServeWouldRefuse: `turnlog gateway` reads
// the data directory's auth/http.token as serve does. A file holding no
// token made it run with none at all (every call forwarded with the
// managed provider key, whoever sent it), and a file others may read was
// taken as it was; it now refuses to start, saying why.
func TestGatewayRefusesATokenFileServeWouldRefuse(t *testing.T) {
	s := startServe(t)
	t.Setenv("TURNLOG_TOKEN", "")
	t.Setenv("TURNLOG_OPENAI_API_KEY", "sk-managed-by-the-gateway")
	file := natsauth.TokenFile(natsauth.Dir(s.data))

	for _, tc := range []struct {
		name    string
		content string
		mode    os.FileMode
		want    string
	}{
		{name: "an empty line", content: "\n", mode: 0o600, want: "holds no token"},
		{name: "empty", content: "", mode: 0o600, want: "holds no token"},
		{name: "readable by others", content: "a-token-of-the-operator\n", mode: 0o644, want: "http.token"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.NoError(t, os.WriteFile(file, []byte(tc.content), tc.mode))
			require.NoError(t, os.Chmod(file, tc.mode))

			out := &syncbuf.Buffer{}
			root := newRootCmd()
			root.SetOut(out)
			root.SetErr(out)
			root.SetArgs([]string{"gateway", "--listen", "127.0.0.1:0", "--data", s.data, "--nats-url", s.natsURL,
				"--spool-dir", filepath.Join(t.TempDir(), "spool")})
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- root.ExecuteContext(ctx) }()
			defer func() { cancel(); <-done }()

			select {
			case err := <-done:
				done <- err
				require.Error(t, err, "%s", out)
				assert.Contains(t, err.Error(), tc.want)
				assert.NotContains(t, out.String(), "gateway on http")
			case <-time.After(10 * time.Second):
				t.Fatalf("the gateway started with the token file %q (mode %o):\n%s", tc.content, tc.mode, out)
			}
		})
	}
}

// TestGatewayWarnsOfATokenOnTheCommandLine: serve warns that a --token
// given on the command line is visible to every user of the machine (ps,
// /proc/<pid>/cmdline); `turnlog gateway` took one without a word. It
// now warns as serve does, and a token from TURNLOG_TOKEN gets no warning.
func TestGatewayWarnsOfATokenOnTheCommandLine(t *testing.T) {
	s := startServe(t)
	_, out, stop := startGatewayCmd(t, s, "--token", "a-token-on-the-command-line")
	stop()
	assert.Contains(t, out.String(), "WARNING: --token on the command line is visible to every user of this machine")
	assert.NotContains(t, out.String(), "a-token-on-the-command-line", "the warning does not repeat the token")

	t.Setenv("TURNLOG_TOKEN", "a-token-from-the-environment")
	_, out, stop = startGatewayCmd(t, s)
	stop()
	assert.NotContains(t, out.String(), "WARNING: --token")
}
