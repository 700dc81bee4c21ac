// Package mockllm runs @dwmkerr/mock-llm for tests: an HTTP server
// written by someone else that answers requests by rules, so that an
// engine's reading of a protocol is checked by a second implementation and
// not only by turnlog's own fakes.
//
// @dwmkerr/mock-llm is an npm package (bin "mock-llm" = dist/main.js). It
// listens on $HOST:$PORT (defaults 0.0.0.0:6556) and reads its rules from
// --config FILE, merged shallowly over its defaults (a "rules" key replaces
// the default rules). A rule matches by path (a regular expression), method
// and a JMESPath expression over {body, headers, method, path, query}; the
// last matching rule answers, with its status and its content, a JSON
// template in which {{jmes request EXPR}} is replaced by EXPR's value
// (strings pasted unescaped, so templated text must not contain quotes or
// backslashes; objects as JSON). A request no rule matches gets a 404. The
// default rule answers POST /v1/chat/completions with the content of the
// request's last message. With "stream": true in the request body it sends
// Chat Completions chunks only, whatever the path: it can stand for other
// APIs in blocking calls only. GET /health answers {"status":"healthy"}.
//
// Start installs the package with npm into TURNLOG_MOCK_LLM_DIR when set
// (an npm prefix, reused when it already holds this version), otherwise
// into the user cache directory (turnlog-test/mock-llm-<version>), so only
// the first run pays for the install (10-45 s here, depending on the
// registry; it is cut at 40 s).
package mockllm

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/freeport"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// Version is the version of @dwmkerr/mock-llm the tests install.
const Version = "0.1.29"

// Start installs (once) and starts mock-llm on a free 127.0.0.1 port with
// config (the YAML of a mock-llm.yaml: streaming settings, rules), waits
// until it answers /health and stops it when the test ends. It returns the
// server's root URL. It skips the test in -short mode, without node and
// npm, or when the install fails, saying why.
func Start(t testing.TB, config string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the test against @dwmkerr/mock-llm (it installs an npm package)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is missing from PATH: install Node.js and npm to run the test against @dwmkerr/mock-llm")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is missing from PATH (npm cannot work without it): install Node.js to run the test against @dwmkerr/mock-llm")
	}
	mainJS := installMockLLM(t, npm)

	// Our own config file, so that a mock-llm.yaml lying around cannot
	// change the rules.
	work := t.TempDir()
	file := filepath.Join(work, "mock-llm.yaml")
	require.NoError(t, os.WriteFile(file, []byte(config), 0o600))

	for attempt := 1; ; attempt++ {
		url, exited, err := runMockLLM(t, node, mainJS, file, work)
		switch {
		case err == nil:
			return url
		case exited && attempt < 3:
			// Most likely the free port was taken before node bound it.
			t.Logf("mock-llm attempt %d: %v", attempt, err)
		default:
			t.Fatalf("mock-llm did not start: %v", err)
		}
	}
}

// installMockLLM returns the path of mock-llm's dist/main.js, installing
// the package first when needed.
func installMockLLM(t testing.TB, npm string) string {
	t.Helper()
	if prefix := os.Getenv("TURNLOG_MOCK_LLM_DIR"); prefix != "" {
		if mainJS, ok := mockLLMInstalled(prefix); ok {
			return mainJS
		}
		return npmInstallMockLLM(t, npm, prefix)
	}

	prefix := filepath.Join(t.TempDir(), "mock-llm")
	if cache, err := os.UserCacheDir(); err == nil {
		prefix = filepath.Join(cache, "turnlog-test", "mock-llm-"+Version)
	}
	if mainJS, ok := mockLLMInstalled(prefix); ok {
		return mainJS
	}
	// Install beside the target and rename into place, so that a parallel
	// test process never sees a half-installed package.
	require.NoError(t, os.MkdirAll(filepath.Dir(prefix), 0o755))
	tmp, err := os.MkdirTemp(filepath.Dir(prefix), ".install-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(tmp) })
	mainJS := npmInstallMockLLM(t, npm, tmp)
	if err := os.Rename(tmp, prefix); err != nil {
		if installed, ok := mockLLMInstalled(prefix); ok {
			return installed // another process won the race
		}
		return mainJS // run from tmp; it is removed when the test ends
	}
	installed, ok := mockLLMInstalled(prefix)
	require.True(t, ok, "mock-llm vanished from %s", prefix)
	return installed
}

// npmInstallMockLLM installs mock-llm under prefix, or skips the test
// saying why it could not.
func npmInstallMockLLM(t testing.TB, npm, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// --ignore-scripts: the package ships its compiled dist/ and nothing in
	// its dependency tree needs an install script, so none may run here.
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", prefix, "--no-audit", "--no-fund",
		"--ignore-scripts", "--loglevel=error", "@dwmkerr/mock-llm@"+Version)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm install --prefix %s @dwmkerr/mock-llm@%s failed (%v), so the test against it cannot run:\n%s",
			prefix, Version, err, out)
	}
	mainJS, ok := mockLLMInstalled(prefix)
	if !ok {
		t.Skipf("npm install @dwmkerr/mock-llm@%s succeeded but %s holds no dist/main.js of that version", Version, prefix)
	}
	return mainJS
}

// mockLLMInstalled reports whether prefix holds mock-llm at Version.
func mockLLMInstalled(prefix string) (mainJS string, ok bool) {
	pkgDir := filepath.Join(prefix, "node_modules", "@dwmkerr", "mock-llm")
	raw, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		return "", false
	}
	var pkg struct {
		Version string            `json:"version"`
		Bin     map[string]string `json:"bin"`
	}
	if json.Unmarshal(raw, &pkg) != nil || pkg.Version != Version || pkg.Bin["mock-llm"] == "" {
		return "", false
	}
	mainJS = filepath.Join(pkgDir, filepath.FromSlash(pkg.Bin["mock-llm"]))
	if _, err := os.Stat(mainJS); err != nil {
		return "", false
	}
	return mainJS, true
}

// runMockLLM starts one mock-llm process on a free port and waits for it.
// On failure the process is gone, exited says whether it ended by itself
// (worth another try on another port) and the error carries its output.
func runMockLLM(t testing.TB, node, mainJS, config, dir string) (url string, exited bool, err error) {
	t.Helper()
	port := freeport.Port(t)
	logs := &syncbuf.Buffer{}
	cmd := exec.Command(node, mainJS, "--config", config)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOST=127.0.0.1", "PORT="+strconv.Itoa(port))
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		return "", false, fmt.Errorf("start node: %w", err)
	}
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-done
	}

	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	client := &http.Client{Timeout: time.Second}
	// Node loads mock-llm's MCP and A2A modules before it listens: about a
	// second on an idle machine, many more on a loaded one (CI's 2 cores
	// running the race-detector suites beside it once took over 30 s, with
	// not a line of output: a wait, not a measurement).
	const startTimeout = 90 * time.Second
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return "", true, fmt.Errorf("mock-llm exited (%v):\n%s", waitErr, logs.String())
		case <-time.After(50 * time.Millisecond):
		}
		resp, err := client.Get(url + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return url, false, nil
			}
		}
	}
	stop()
	return "", false, fmt.Errorf("mock-llm did not answer %s/health within %v:\n%s", url, startTimeout, logs.String())
}
