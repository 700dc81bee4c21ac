package cli

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/natsauth"
)

// served is a `turnlog serve` running in this process.
type served struct {
	data    string
	natsURL string
	httpURL string
	out     *syncbuf.Buffer
	// stop stops serve as SIGTERM does and waits for it (at most 30 s,
	// else the test fails); the test's cleanup calls it too.
	stop func()
}

// adminConn connects to serve s's NATS with the admin key of its data
// directory, until the test ends.
func (s *served) adminConn(t *testing.T) *nats.Conn {
	t.Helper()
	key, err := nats.NkeyOptionFromSeed(natsauth.KeyFile(natsauth.Dir(s.data), natsauth.Admin))
	require.NoError(t, err)
	nc, err := nats.Connect(s.natsURL, key)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	return nc
}

// startServe runs `turnlog serve` with args on free ports and a fresh data
// directory, as a user would, and waits for its banner.
func startServe(t *testing.T, args ...string) *served {
	t.Helper()
	return startServeIn(t, filepath.Join(t.TempDir(), "data"), args...)
}

// startServeIn is startServe on the data directory data ("" leaves --data
// to its default, ./.turnlog).
func startServeIn(t *testing.T, data string, args ...string) *served {
	t.Helper()
	s := &served{data: data, out: &syncbuf.Buffer{}}
	base := []string{"serve", "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "1", "--log-level", "error"}
	if data != "" {
		base = append(base, "--data", data)
	} else {
		s.data = ".turnlog"
	}
	root := newRootCmd()
	root.SetOut(s.out)
	root.SetErr(s.out)
	root.SetArgs(append(base, args...))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	s.stop = sync.OnceFunc(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop within 30s")
		}
	})
	t.Cleanup(s.stop)
	natsRe := regexp.MustCompile(`listening on (nats://\S+)`)
	httpRe := regexp.MustCompile(`console on (http://\S+)`)
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		out := s.out.String()
		if m := natsRe.FindStringSubmatch(out); m != nil {
			s.natsURL = m[1]
		}
		if m := httpRe.FindStringSubmatch(out); m != nil {
			s.httpURL = m[1]
		}
		if strings.Contains(out, "ready; try: ") {
			return s
		}
		select {
		case err := <-done:
			t.Fatalf("serve stopped: %v\n%s", err, out)
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start within 60s:\n%s", s.out.String())
	return nil
}

// runCmd runs turnlog with args and the environment env (KEY=VALUE), as a
// user would in a shell, and returns its output and exit code.
func runCmd(t *testing.T, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	return runCmdIn(ctx, t, env, stdin, args...)
}

// runCmdIn is runCmd until ctx ends, for a command that would otherwise
// run on (a server, a worker).
func runCmdIn(ctx context.Context, t *testing.T, env []string, stdin string, args ...string) (string, int) {
	t.Helper()
	// Each run sees only the connection variables it names.
	for _, k := range connectionEnv {
		t.Setenv(k, "")
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetIn(strings.NewReader(stdin))
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		if ee.err != nil {
			out.WriteString(ee.err.Error())
		}
		return out.String(), ee.code
	case err != nil:
		out.WriteString(err.Error())
		return out.String(), 2
	}
	return out.String(), 0
}

// connectionEnv are the variables that steer how a command connects.
var connectionEnv = []string{"TURNLOG_DATA", "TURNLOG_NATS_URL", "NATS_URL", "TURNLOG_NATS_CREDS", "NATS_CREDS",
	"TURNLOG_NATS_NKEY", "NATS_NKEY", "TURNLOG_NATS_CONTEXT", "NATS_CONTEXT", "TURNLOG_NATS_SEED", "TURNLOG_NATS_INBOX_PREFIX", "XDG_CONFIG_HOME",
	"TURNLOG_NATS_USER", "NATS_USER", "TURNLOG_NATS_PASSWORD", "NATS_PASSWORD"}

// TestServeRefusesWhoeverHasNoCredential reproduces issue 15, item 1: the
// NATS port of `turnlog serve` accepted anyone, so anyone could set the
// template, erase a conversation or publish garbage on its events subject.
func TestServeRefusesWhoeverHasNoCredential(t *testing.T) {
	s := startServe(t)
	elsewhere := t.TempDir() // a directory without serve's keys

	_, err := nats.Connect(s.natsURL)
	assert.ErrorIs(t, err, nats.ErrAuthorization, "a connection without a credential must be refused")

	out, code := runCmd(t, []string{"TURNLOG_DATA=" + elsewhere}, "You obey [file:cmdline]", "template", "set", "-", "--nats-url", s.natsURL)
	assert.NotEqual(t, 0, code, "template set without a credential: %s", out)
	assert.Contains(t, out, "requires a credential")

	out, code = runCmd(t, []string{"TURNLOG_DATA=" + elsewhere}, "", "erase", "victim", "--yes", "--nats-url", s.natsURL)
	assert.NotEqual(t, 0, code, "erase without a credential: %s", out)
	assert.Contains(t, out, "requires a credential")

	// The data directory's owner is its admin: the same commands work
	// with no flag when they find serve's data directory.
	out, code = runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "You are terse.", "template", "set", "-", "--nats-url", s.natsURL)
	assert.Equal(t, 0, code, out)
}

// TestServeCreatesPrivateCredentials: serve writes one key per role, for
// its owner's eyes only, and keeps them across restarts.
func TestServeCreatesPrivateCredentials(t *testing.T) {
	s := startServe(t)
	info, err := os.Stat(filepath.Join(s.data, "auth"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "auth directory mode")
	for _, role := range []string{"admin", "client", "worker"} {
		info, err := os.Stat(filepath.Join(s.data, "auth", role+".nk"))
		require.NoError(t, err, role)
		assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "%s.nk mode", role)
	}
	assert.Contains(t, s.out.String(), "auth")
}

// TestTokenCannotBeStolen reproduces issue 15, item 2 as the attacker ran
// it against `turnlog serve --token X`: set a template that reads the
// server's command line over the NATS port, have a conversation rendered
// with it, read its Turn over HTTP without the token. Each step is now
// refused: the NATS port wants a key, the HTTP reads want the token.
func TestTokenCannotBeStolen(t *testing.T) {
	s := startServe(t, "--token", "X-secret-token")
	elsewhere := t.TempDir()

	out, code := runCmd(t, []string{"TURNLOG_DATA=" + elsewhere}, "[file:cmdline]", "template", "set", "-", "--nats-url", s.natsURL)
	assert.NotEqual(t, 0, code, "template set over the NATS port without a key: %s", out)
	out, code = runCmd(t, []string{"TURNLOG_DATA=" + elsewhere}, "", "chat", "stolen", "-m", "hi", "--nats-url", s.natsURL)
	assert.NotEqual(t, 0, code, "a chat request over the NATS port without a key: %s", out)

	for _, path := range []string{"/conversations", "/conversations/stolen/turn", "/conversations/stolen/events", "/system-prompt"} {
		res, err := http.Get(s.httpURL + path)
		require.NoError(t, err)
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "GET %s without the token", path)
		assert.NotContains(t, string(body), "X-secret-token")
	}
}

// TestServeNoAuth: --no-auth is the explicit opt-out, and says what it
// means.
func TestServeNoAuth(t *testing.T) {
	s := startServe(t, "--no-auth")
	assert.Contains(t, s.out.String(), "WARNING: NATS authentication is off")
	assert.Contains(t, s.out.String(), "NO authentication")
	nc, err := nats.Connect(s.natsURL)
	require.NoError(t, err, "--no-auth lets anyone in")
	nc.Close()
	keys, err := filepath.Glob(filepath.Join(s.data, "auth", "*.nk"))
	require.NoError(t, err)
	assert.Empty(t, keys, "no keys are made without authentication")
	// The HTTP API keeps its token: --no-auth is about NATS only.
	_, err = os.Stat(filepath.Join(s.data, "auth", "http.token"))
	assert.NoError(t, err, "the HTTP API still has its token")
}

// Issue 17: the banner's hint ignored a non-default --listen, so the
// command it suggested went to 127.0.0.1:4222, another server or none.
// The banner serve prints names its address, and the hint works as pasted
// (from serve's directory, whose data holds the key: TURNLOG_DATA here).
func TestServeBannerNamesANonDefaultListen(t *testing.T) {
	s := startServe(t) // --listen 127.0.0.1:0
	hint := "turnlog chat --nats-url " + s.natsURL + " -m hello"
	assert.Contains(t, s.out.String(), "turnlog: 1 worker ready; try: "+hint+" (Ctrl-C to stop)\n")

	words, err := shellWords(hint)
	require.NoError(t, err)
	out, code := runCmd(t, []string{"TURNLOG_DATA=" + s.data}, "", words[1:]...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "You said: hello")
}

// serve's banner says where an app's SDK points to be recorded, and how
// it authenticates (README's "Record an existing app"), naming a provider
// key's variable, never the key.
func TestServeBannerNamesTheGateway(t *testing.T) {
	t.Setenv("TURNLOG_OPENAI_API_KEY", "sk-openai-managed-by-turnlog")
	t.Setenv("TURNLOG_ANTHROPIC_API_KEY", "")
	s := startServe(t, "--openai-upstream", "http://127.0.0.1:1/v1")
	out := s.out.String()
	assert.Contains(t, out, "turnlog: recording gateway for OpenAI SDKs: base URL "+s.httpURL+"/v1, forwarded to http://127.0.0.1:1/v1; managed key (TURNLOG_OPENAI_API_KEY): clients send turnlog's token as their API key\n")
	assert.Contains(t, out, "turnlog: recording gateway for Anthropic SDKs: base URL "+s.httpURL+", forwarded to https://api.anthropic.com; keys pass through")
	assert.NotContains(t, out, "sk-openai-managed-by-turnlog")
}
