package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/openai"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// The test below runs the engine against a Chat Completions server that
// someone else wrote, so that our reading of the protocol is checked by a
// second implementation and not only by our own fake.
//
// @dwmkerr/mock-llm is an npm package (bin "mock-llm" = dist/main.js). It
// listens on $HOST:$PORT (defaults 0.0.0.0:6556), reads its rules from
// ./mock-llm.yaml in its working directory or from --config FILE, merged
// shallowly over its defaults, and by default answers POST
// /v1/chat/completions with the content of the request's LAST message
// (messages[-1].content, pasted unescaped into a JSON template, so the text
// must not contain quotes or backslashes), finish_reason "stop", no usage.
// With "stream": true it sends the same content as SSE chunks of
// streaming.chunkSize characters every streaming.chunkIntervalMs, then
// [DONE]. GET /health answers {"status":"healthy"}.
//
// The test installs the package with npm into TURNLOG_MOCK_LLM_DIR when set
// (an npm prefix, reused when it already holds this version), otherwise
// into the user cache directory (turnlog-test/mock-llm-<version>), so only
// the first run pays for the install (10-45 s here, depending on the
// registry; it is cut at 40 s). It skips when npm is missing
// or the install fails, and in -short mode.
const mockLLMVersion = "0.1.29"

func TestMockLLMEcho(t *testing.T) {
	baseURL := startMockLLM(t)
	const last = "hello from turnlog, echo me back in pieces"
	turn := &projector.Turn{Conversation: "mock", Blocks: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "You are an echo.", Trust: events.Trusted},
		{ID: "u1", Kind: events.KindUser, Text: "first"},
		{ID: "r", Kind: events.KindReasoning, Text: "not sent"},
		{ID: "a1", Kind: events.KindLLMText, Text: "first"},
		{ID: "u2", Kind: events.KindUser, Text: last},
	}}
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			e, err := openai.New(openai.Config{BaseURL: baseURL + "/v1", APIKey: "mock-key", Model: "mock-model", Stream: stream})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()

			var deltas []string
			out, err := e.Infer(ctx, engine.Input{Turn: turn, Tools: testTools}, func(d engine.Delta) {
				assert.Equal(t, events.KindLLMText, d.Kind)
				deltas = append(deltas, d.Text)
			})
			require.NoError(t, err)
			assert.Equal(t, []events.Block{{Kind: events.KindLLMText, Text: last}}, out.Blocks)
			assert.Equal(t, "stop", out.StopReason)
			assert.Equal(t, last, strings.Join(deltas, ""))
			if stream {
				// chunkSize 8 (see startMockLLM): the text arrives in pieces.
				assert.Greater(t, len(deltas), 3, "got deltas %q, want the text in several chunks", deltas)
			}
		})
	}
}

// startMockLLM installs (once) and starts mock-llm on a free 127.0.0.1
// port, waits until it answers /health and stops it when the test ends. It
// returns the server's root URL.
func startMockLLM(t *testing.T) string {
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
	// change the rules; only streaming is set, the default echo rule stays.
	work := t.TempDir()
	config := filepath.Join(work, "mock-llm.yaml")
	require.NoError(t, os.WriteFile(config, []byte("streaming:\n  chunkSize: 8\n  chunkIntervalMs: 1\n"), 0o600))

	for attempt := 1; ; attempt++ {
		url, exited, err := runMockLLM(t, node, mainJS, config, work)
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
func installMockLLM(t *testing.T, npm string) string {
	t.Helper()
	if prefix := os.Getenv("TURNLOG_MOCK_LLM_DIR"); prefix != "" {
		if mainJS, ok := mockLLMInstalled(prefix); ok {
			return mainJS
		}
		return npmInstallMockLLM(t, npm, prefix)
	}

	prefix := filepath.Join(t.TempDir(), "mock-llm")
	if cache, err := os.UserCacheDir(); err == nil {
		prefix = filepath.Join(cache, "turnlog-test", "mock-llm-"+mockLLMVersion)
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
func npmInstallMockLLM(t *testing.T, npm, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	// --ignore-scripts: the package ships its compiled dist/ and nothing in
	// its dependency tree needs an install script, so none may run here.
	cmd := exec.CommandContext(ctx, npm, "install", "--prefix", prefix, "--no-audit", "--no-fund",
		"--ignore-scripts", "--loglevel=error", "@dwmkerr/mock-llm@"+mockLLMVersion)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm install --prefix %s @dwmkerr/mock-llm@%s failed (%v), so the test against it cannot run:\n%s",
			prefix, mockLLMVersion, err, out)
	}
	mainJS, ok := mockLLMInstalled(prefix)
	if !ok {
		t.Skipf("npm install @dwmkerr/mock-llm@%s succeeded but %s holds no dist/main.js of that version", mockLLMVersion, prefix)
	}
	return mainJS
}

// mockLLMInstalled reports whether prefix holds mock-llm at mockLLMVersion.
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
	if json.Unmarshal(raw, &pkg) != nil || pkg.Version != mockLLMVersion || pkg.Bin["mock-llm"] == "" {
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
func runMockLLM(t *testing.T, node, mainJS, config, dir string) (url string, exited bool, err error) {
	t.Helper()
	port := freePort(t)
	logs := &syncBuffer{}
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
	// second on an idle machine, many more on a loaded one.
	const startTimeout = 30 * time.Second
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// syncBuffer collects a child process's output, which exec writes from its
// own goroutines while the test may read it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
