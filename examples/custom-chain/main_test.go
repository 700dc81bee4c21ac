package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/freeport"
)

// build compiles pkg into the test's temp dir.
func build(t *testing.T, ctx context.Context, name, pkg string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), name)
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Run(), "go build %s", pkg)
	return bin
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs bin with args and returns its exit code and output. The
// commands find serve's data directory, and its admin key, in
// TURNLOG_DATA.
func run(t *testing.T, ctx context.Context, data, bin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(os.Environ(), "TURNLOG_DATA="+data)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "%s %v: %v", bin, args, err)
		code = ee.ExitCode()
	}
	return result{code, stdout.String(), stderr.String()}
}

// TestCustomChainBinary builds this example and the stock turnlog, serves
// with the example's profiles, chats twice, and checks what a team that
// builds its own binary relies on: replay --verify and replay --rerun
// with its own middleware and engine pass; the stock binary's rerun of
// the same profiles fails at once, naming what it lacks.
func TestCustomChainBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two binaries and runs a server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	custom := build(t, ctx, "custom-chain", ".")
	stock := build(t, ctx, "turnlog", "github.com/turnlog/turnlog/cmd/turnlog")

	data := t.TempDir()
	url := fmt.Sprintf("nats://127.0.0.1:%d", freeport.Port(t))
	conn := []string{"--nats-url", url}
	var serveOut bytes.Buffer
	serve := exec.CommandContext(ctx, custom, "serve", "--data", data, "--listen", url[len("nats://"):], "--http", "",
		"--profiles", "profiles.yaml", "--workers", "1")
	serve.Stdout, serve.Stderr = &serveOut, &serveOut
	require.NoError(t, serve.Start())
	t.Cleanup(func() {
		_ = serve.Process.Signal(os.Interrupt)
		_ = serve.Wait()
		if t.Failed() {
			t.Logf("serve's output:\n%s", serveOut.String())
		}
	})

	// Two chats; a request ID each, so that a retry while the server
	// starts never asks twice.
	for i, msg := range []string{"hello", "how are you?"} {
		args := append([]string{"chat", "--timeout", "20s", "--request-id", ulid.Make().String(), "-m", msg}, conn...)
		args = append(args, "demo")
		var r result
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
			if r = run(t, ctx, data, custom, args...); r.code == 0 || time.Now().After(deadline) {
				break
			}
		}
		require.Equal(t, 0, r.code, "chat %d: %s", i+1, r.stderr)
		assert.Equal(t, "echo: "+msg+"\n", r.stdout, "example.echo answered, with its prefix from the profile")
	}

	r := run(t, ctx, data, custom, append([]string{"replay", "demo"}, conn...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "example.sysprompt", "the timeline names the middleware that set the prompt")
	assert.Contains(t, r.stdout, "You are the custom-chain example.")

	r = run(t, ctx, data, custom, append([]string{"replay", "--verify", "demo"}, conn...)...)
	assert.Equal(t, 0, r.code, "replay --verify: %s%s", r.stdout, r.stderr)

	rerun := append([]string{"replay", "--rerun", "--profiles", "profiles.yaml", "demo"}, conn...)
	r = run(t, ctx, data, custom, rerun...)
	assert.Equal(t, 0, r.code, "replay --rerun with the custom binary: %s%s", r.stdout, r.stderr)

	r = run(t, ctx, data, stock, rerun...)
	assert.Equal(t, 2, r.code, "the stock binary cannot rerun: %s%s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, `middleware "example.sysprompt" is not registered in this binary`)
	assert.Contains(t, r.stderr, "docs/library.md", "it says how to get a binary that has it")

	// A change to the middleware's settings is what a rerun is for: the
	// same log, another prompt, and the rerun shows where they part.
	changed := filepath.Join(t.TempDir(), "profiles.yaml")
	yaml, err := os.ReadFile("profiles.yaml")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(changed, bytes.Replace(yaml, []byte("Repeat what the user says."), []byte("Say it twice."), 1), 0o600))
	r = run(t, ctx, data, custom, append([]string{"replay", "--rerun", "--profiles", changed, "demo"}, conn...)...)
	assert.Equal(t, 1, r.code, "a rerun with another prompt differs: %s%s", r.stdout, r.stderr)
}
