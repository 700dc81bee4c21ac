// Package sdktest installs the providers' official JavaScript SDKs (npm
// "openai" and "@anthropic-ai/sdk"), and the Vercel AI SDK ("ai" with its
// OpenAI provider, the most used TypeScript client beside them), for
// tests, and runs node scripts that use them: clients turnlog did not
// write, to check the gateway against.
//
// Install puts them under TURNLOG_SDK_DIR when set (an npm prefix, reused
// when it holds these versions), else under the user cache directory
// (turnlog-test/sdk-<versions>), so only the first run pays for the
// install. Without node and npm, or when the install fails, the test is
// skipped, saying why.
package sdktest

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// The versions the tests install (major versions pinned: 6.x, 1.x).
const (
	OpenAIVersion    = "6.49.0"
	AnthropicVersion = "1.14.0"
	// VercelAIVersion and VercelOpenAIVersion are the Vercel AI SDK's
	// ("ai") and its OpenAI provider's ("@ai-sdk/openai"); ZodVersion is
	// the schema library they take as a peer.
	VercelAIVersion     = "6.0.326"
	VercelOpenAIVersion = "3.0.141"
	ZodVersion          = "4.6.7"
)

// packages are what Install installs, by name, at their versions.
var packages = map[string]string{
	"openai":            OpenAIVersion,
	"@anthropic-ai/sdk": AnthropicVersion,
	"ai":                VercelAIVersion,
	"@ai-sdk/openai":    VercelOpenAIVersion,
	"zod":               ZodVersion,
}

// specs are packages as npm install takes them, in a fixed order.
func specs() []string {
	out := make([]string, 0, len(packages))
	for name, v := range packages {
		out = append(out, name+"@"+v)
	}
	slices.Sort(out)
	return out
}

// Install returns an npm prefix whose node_modules holds the SDKs,
// installing them first when needed.
func Install(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: skipping the test with the providers' npm SDKs (it installs npm packages)")
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		t.Skip("npm is missing from PATH: install Node.js and npm to run the tests with the openai, @anthropic-ai/sdk and Vercel ai packages")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is missing from PATH: install Node.js to run the tests with the openai, @anthropic-ai/sdk and Vercel ai packages")
	}
	prefix := os.Getenv("TURNLOG_SDK_DIR")
	if prefix == "" {
		prefix = filepath.Join(t.TempDir(), "sdk")
		if cache, err := os.UserCacheDir(); err == nil {
			prefix = filepath.Join(cache, "turnlog-test", "sdk-"+OpenAIVersion+"-"+AnthropicVersion+"-ai"+VercelAIVersion+"-"+VercelOpenAIVersion)
		}
	}
	if installed(prefix) {
		return prefix
	}
	if err := os.MkdirAll(filepath.Dir(prefix), 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(prefix), ".install-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"install", "--prefix", tmp, "--no-audit", "--no-fund", "--ignore-scripts", "--loglevel=error"}, specs()...)
	cmd := exec.CommandContext(ctx, npm, args...)
	cmd.WaitDelay = 5 * time.Second
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("npm install %s failed (%v), so the tests with them cannot run:\n%s", strings.Join(specs(), " "), err, out)
	}
	if err := os.Rename(tmp, prefix); err != nil && !installed(prefix) {
		return tmp
	}
	return prefix
}

func installed(prefix string) bool {
	for pkg, v := range packages {
		raw, err := os.ReadFile(filepath.Join(prefix, "node_modules", filepath.FromSlash(pkg), "package.json"))
		if err != nil {
			return false
		}
		var p struct{ Version string }
		if json.Unmarshal(raw, &p) != nil || p.Version != v {
			return false
		}
	}
	return true
}

// Run runs the node script file with env added, from a directory where
// require() finds the SDKs, and returns its standard output; a failure
// fails the test with the script's output.
func Run(t testing.TB, prefix, script string, env ...string) []byte {
	t.Helper()
	abs, err := filepath.Abs(script)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", abs)
	cmd.Env = append(append(os.Environ(), "NODE_PATH="+filepath.Join(prefix, "node_modules")), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %s: %v\nstdout:\n%s\nstderr:\n%s", script, err, out, stderr.String())
	}
	return out
}
