package cli

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// adminSeed is the seed line of the data directory's admin key.
func adminSeed(t *testing.T, data string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(data, "auth", "admin.nk"))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "SU") {
			return line
		}
	}
	t.Fatalf("no seed in admin.nk:\n%s", b)
	return ""
}

// postJSON posts body to url with the bearer token (none when "") and
// returns the status and the body.
func postJSON(t *testing.T, url, token string, body any) (int, string) {
	t.Helper()
	data, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(string(data)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}

// TestServeDefaultsKeepTheAdminKey reproduces the theft an audit found
// after issue 15: with serve's defaults (HTTP API on, no --token), POST
// /system-prompt/render without any token rendered [file:admin.nk] in
// <data>/auth and answered the admin seed, the key to everything.
func TestServeDefaultsKeepTheAdminKey(t *testing.T) {
	s := startServe(t)
	seed := adminSeed(t, s.data)
	status, body := postJSON(t, s.httpURL+"/system-prompt/render", "",
		map[string]string{"template": "[file:admin.nk]", "cwd": filepath.Join(s.data, "auth")})
	assert.NotContains(t, body, seed, "the admin seed left the server")
	assert.Equal(t, http.StatusUnauthorized, status, body)
}

// getStatus GETs url with the bearer token (none when "") and returns the
// status.
func getStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	res.Body.Close()
	return res.StatusCode
}

// tokenOf reads the token serve made in its data directory.
func tokenOf(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(data, "auth", "http.token")
	info, err := os.Stat(path)
	require.NoError(t, err, "serve makes the token file")
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm(), "http.token mode")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return strings.TrimSpace(string(b))
}

// TestServeMakesAndKeepsTheHTTPToken: without --token, serve requires the
// token of <data>/auth/http.token, says where it is and how to open the
// console with it, and keeps it across restarts.
func TestServeMakesAndKeepsTheHTTPToken(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	s := startServeIn(t, data)
	token := tokenOf(t, data)
	assert.Equal(t, http.StatusUnauthorized, getStatus(t, s.httpURL+"/conversations", ""))
	assert.Equal(t, http.StatusUnauthorized, getStatus(t, s.httpURL+"/conversations", "a-guess"))
	assert.Equal(t, http.StatusOK, getStatus(t, s.httpURL+"/conversations", token))
	tokenFile := filepath.Join(data, "auth", "http.token")
	assert.Contains(t, s.out.String(), tokenFile, "the banner says where the token is")
	assert.Contains(t, s.out.String(), s.httpURL+"/#token=", "and how to open the console with it")
	assert.NotContains(t, s.out.String(), token, "not on a non-terminal, which may be a log file")

	again := startServeIn(t, filepath.Join(t.TempDir(), "other"))
	assert.NotEqual(t, token, tokenOf(t, again.data), "each data directory has its own token")
	assert.Equal(t, http.StatusUnauthorized, getStatus(t, again.httpURL+"/conversations", token))
}

// TestServeRefusesATokenFileOthersMayRead: as with the NATS keys, a token
// file other users may read stops serve, saying what to do.
func TestServeRefusesATokenFileOthersMayRead(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	require.NoError(t, os.MkdirAll(filepath.Join(data, "auth"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(data, "auth", "http.token"), []byte("shared-token\n"), 0o644))
	out, code := runCmd(t, nil, "", "serve", "--data", data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--workers", "0")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "other users may read it")
	assert.Contains(t, out, "chmod 600")
}

// TestServeNoToken: --no-token is the explicit opt-out, and says what it
// means.
func TestServeNoToken(t *testing.T) {
	s := startServe(t, "--no-token")
	assert.Contains(t, s.out.String(), "WARNING: the HTTP API needs no token")
	assert.Contains(t, s.out.String(), "NO token")
	// The gateway's lines say so too, not that calls carry the token.
	assert.Contains(t, s.out.String(), "keys pass through: each call carries its own provider key (TURNLOG_ANTHROPIC_API_KEY unset); no token (--no-token)")
	assert.NotContains(t, s.out.String(), "Turnlog-Token: <turnlog's token>")
	assert.Equal(t, http.StatusOK, getStatus(t, s.httpURL+"/conversations", ""))
	_, err := os.Stat(filepath.Join(s.data, "auth", "http.token"))
	assert.True(t, os.IsNotExist(err), "no token file is made")

	out, code := runCmd(t, []string{"TURNLOG_TOKEN=x"}, "", "serve", "--no-token", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0")
	assert.Equal(t, 2, code, out)
	assert.Contains(t, out, "contradict")
}

// TestServeWarnsOfATokenOnTheCommandLine: every local user reads a
// process's arguments, so --token gets a warning naming the safer ways;
// TURNLOG_TOKEN does not.
func TestServeWarnsOfATokenOnTheCommandLine(t *testing.T) {
	s := startServe(t, "--token", "cmdline-token")
	assert.Contains(t, s.out.String(), "WARNING: --token on the command line is visible to every user")
	assert.Contains(t, s.out.String(), "TURNLOG_TOKEN")
	assert.Equal(t, http.StatusOK, getStatus(t, s.httpURL+"/conversations", "cmdline-token"))

	t.Setenv("TURNLOG_TOKEN", "env-token")
	s = startServe(t)
	assert.NotContains(t, s.out.String(), "WARNING")
	assert.Equal(t, http.StatusOK, getStatus(t, s.httpURL+"/conversations", "env-token"))
	assert.Equal(t, http.StatusUnauthorized, getStatus(t, s.httpURL+"/conversations", ""))
	_, err := os.Stat(filepath.Join(s.data, "auth", "http.token"))
	assert.True(t, os.IsNotExist(err), "a given token makes no file")
}

// TestServeRenderReadsOnlyWhereWorkersMay: with the token, a template
// preview still cannot read the keys of <data>/auth (even when the cwd
// roots allow every directory), and reads only under the workers' cwd
// roots.
func TestServeRenderReadsOnlyWhereWorkersMay(t *testing.T) {
	s := startServe(t, "--cwd-root", "/")
	token, seed := tokenOf(t, s.data), adminSeed(t, s.data)
	auth := filepath.Join(s.data, "auth")
	for _, tc := range []struct {
		name, template, cwd string
	}{
		{"the auth directory as cwd", "[file:admin.nk][file:http.token]", auth},
		{"the data directory as cwd", "[file:auth/admin.nk][file:auth/http.token]", s.data},
		{"an absolute name", "[file:" + filepath.Join(auth, "admin.nk") + "]", s.data},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, body := postJSON(t, s.httpURL+"/system-prompt/render", token, map[string]string{"template": tc.template, "cwd": tc.cwd})
			assert.Equal(t, http.StatusOK, status, body)
			assert.NotContains(t, body, seed)
			assert.NotContains(t, body, token)
		})
	}

	root, elsewhere := t.TempDir(), t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Project rules."), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "AGENTS.md"), []byte("Someone else's notes."), 0o600))
	s = startServe(t, "--cwd-root", root)
	token = tokenOf(t, s.data)
	status, body := postJSON(t, s.httpURL+"/system-prompt/render", token, map[string]string{"template": "[file:AGENTS.md]", "cwd": root})
	assert.Equal(t, http.StatusOK, status, body)
	assert.Contains(t, body, "Project rules.")
	status, body = postJSON(t, s.httpURL+"/system-prompt/render", token, map[string]string{"template": "[file:AGENTS.md]", "cwd": elsewhere})
	assert.Equal(t, http.StatusForbidden, status, body)
	assert.NotContains(t, body, "Someone else's notes.")
	assert.Contains(t, body, "cwd_roots", "the answer names the setting")
	status, body = postJSON(t, s.httpURL+"/system-prompt/render", token, map[string]string{"template": "[system:date]", "cwd": elsewhere})
	assert.Equal(t, http.StatusOK, status, "a template that reads no file renders whatever the cwd, as in a worker: %s", body)
}

// TestServeWorkersNeverReadTheKeys: a chat request whose cwd is serve's
// <data>/auth, with a template naming the key files, gets a prompt without
// them, even with cwd roots that allow every directory; the same template
// reads a file of another directory.
func TestServeWorkersNeverReadTheKeys(t *testing.T) {
	s := startServe(t, "--cwd-root", "/")
	seed, token := adminSeed(t, s.data), tokenOf(t, s.data)
	admin := []string{"TURNLOG_DATA=" + s.data}
	url := []string{"--nats-url", s.natsURL}
	out, code := runCmd(t, admin, "Keys: [file:admin.nk] [file:http.token] [file:NOTES]", append([]string{"template", "set", "-"}, url...)...)
	require.Equal(t, 0, code, out)

	notes := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(notes, "NOTES"), []byte("visible notes"), 0o600))
	for conv, cwd := range map[string]string{"keys": filepath.Join(s.data, "auth"), "notes": notes} {
		out, code = runCmd(t, admin, "", append([]string{"chat", conv, "-m", "hi", "--cwd", cwd}, url...)...)
		require.Equal(t, 0, code, out)
	}
	out, code = runCmd(t, admin, "", append([]string{"export", "keys"}, url...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Keys:", "the template was rendered")
	assert.NotContains(t, out, seed)
	assert.NotContains(t, out, token)
	out, code = runCmd(t, admin, "", append([]string{"export", "notes"}, url...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "visible notes", "elsewhere the template reads files")
}

// TestStandaloneWorkerNeverReadsTheKeys: a `turnlog worker` started on its
// own (not by serve) denies its data directory's auth/ to the template's
// variables as serve's workers do, even when its cwd roots allow any
// directory: a request whose cwd is that directory must not put the
// worker's key into the log, where clients read it.
func TestStandaloneWorkerNeverReadsTheKeys(t *testing.T) {
	s := startServe(t, "--workers", "0")
	seed := adminSeed(t, s.data)
	admin := []string{"TURNLOG_DATA=" + s.data}
	url := []string{"--nats-url", s.natsURL}
	out, code := runCmd(t, admin, "Keys: [file:admin.nk] [file:worker.nk]", append([]string{"template", "set", "-"}, url...)...)
	require.Equal(t, 0, code, out)

	root := newRootCmd()
	logs := &syncbuf.Buffer{}
	root.SetOut(logs)
	root.SetErr(logs)
	root.SetArgs([]string{"worker", "--nats-url", s.natsURL, "--data", s.data, "--cwd-root", "/", "--metrics", "", "--log-level", "error"})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	out, code = runCmd(t, admin, "", append([]string{"chat", "keys", "-m", "hi", "--cwd", filepath.Join(s.data, "auth"), "--timeout", "30s"}, url...)...)
	require.Equal(t, 0, code, "%s\nworker: %s", out, logs.String())
	out, code = runCmd(t, admin, "", append([]string{"export", "keys"}, url...)...)
	require.Equal(t, 0, code, out)
	assert.Contains(t, out, "Keys:", "the template was rendered")
	assert.NotContains(t, out, seed, "the admin key reached the log")
	workerSeed, err := os.ReadFile(filepath.Join(s.data, "auth", "worker.nk"))
	require.NoError(t, err)
	assert.NotContains(t, out, strings.TrimSpace(string(workerSeed)), "the worker key reached the log")
}
