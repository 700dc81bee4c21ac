package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
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

	// example.echo records its request as the scripted engine does, and
	// registers its rendering with the engine: this binary prints each
	// call's request again, byte for byte, and --verify checks its hash.
	r = run(t, ctx, data, custom, append([]string{"replay", "-o", "json", "demo"}, conn...)...)
	require.Equal(t, 0, r.code, r.stderr)
	recorded := wireHashes(t, r.stdout)
	require.Len(t, recorded, 2, "each model call recorded its request")
	for i, msg := range []string{"hello", "how are you?"} {
		n := fmt.Sprint(i + 1)
		r = run(t, ctx, data, custom, append([]string{"replay", "--inference", n, "--wire", "demo"}, conn...)...)
		require.Equal(t, 0, r.code, "replay --inference %s --wire: %s", n, r.stderr)
		body, err := json.Marshal(map[string]string{"prefix": "echo: ", "user": msg})
		require.NoError(t, err)
		assert.Equal(t, string(body), r.stdout, "call %s: the request example.echo answered from", n)
		assert.Equal(t, recorded[i], fmt.Sprintf("%x", sha256.Sum256([]byte(r.stdout))), "call %s: the body whose hash the call recorded", n)
	}
	r = run(t, ctx, data, custom, append([]string{"replay", "--inference", "2", "demo"}, conn...)...)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "-> not sent: example.echo reads only the last user message", "the blocks the engine left out are shown as such")
	r = run(t, ctx, data, custom, append([]string{"replay", "--verify", "-o", "json", "demo"}, conn...)...)
	require.Equal(t, 0, r.code, "replay --verify: %s%s", r.stdout, r.stderr)
	var v struct {
		Wires               int      `json:"wires"`
		UncheckedRenderings []string `json:"unchecked_renderings"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &v))
	assert.Equal(t, 2, v.Wires, "--verify rendered both requests again and checked their hashes")
	assert.Empty(t, v.UncheckedRenderings)

	// The stock binary does not have example.echo's rendering: it says
	// so, and never passes those requests as verified.
	r = run(t, ctx, data, stock, append([]string{"replay", "--inference", "1", "--wire", "demo"}, conn...)...)
	assert.Equal(t, 2, r.code, "the stock binary cannot render example.echo's request: %s", r.stdout)
	assert.Contains(t, r.stderr, `unknown wire rendering "example.echo/1"`)
	r = run(t, ctx, data, stock, append([]string{"replay", "--verify", "demo"}, conn...)...)
	assert.Equal(t, 0, r.code, "the inputs still verify: %s%s", r.stdout, r.stderr)
	assert.Contains(t, r.stdout, "2 requests of renderings this turnlog cannot render (example.echo/1) not checked")

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

// wireHashes returns the wire_sha256 of every model call in the output of
// `replay -o json`, in order.
func wireHashes(t *testing.T, out string) []string {
	t.Helper()
	var doc struct {
		Events []struct {
			Inference *struct {
				WireSHA256 string `json:"wire_sha256"`
			} `json:"inference"`
		} `json:"events"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &doc))
	var hashes []string
	for _, e := range doc.Events {
		if e.Inference != nil {
			hashes = append(hashes, e.Inference.WireSHA256)
		}
	}
	return hashes
}
