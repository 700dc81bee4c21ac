package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/freeport"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// tourStep is one command of the README's tour.
type tourStep struct {
	line string   // as written, comment included
	args []string // after "turnlog"
	exit int      // the exit code its comment announces ("exit 1"), else 0
}

// readmeTour reads the command block that follows README.md's "tour"
// marker.
func readmeTour(t *testing.T) []tourStep {
	t.Helper()
	data, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	text := string(data)
	at := strings.Index(text, "<!-- tour:")
	require.NotEqual(t, -1, at, "README.md has no <!-- tour: marker")
	rest := text[at:]
	start := strings.Index(rest, "```sh\n")
	require.NotEqual(t, -1, start, "no ```sh block after the tour marker")
	rest = rest[start+len("```sh\n"):]
	end := strings.Index(rest, "```")
	require.NotEqual(t, -1, end)
	exitRe := regexp.MustCompile(`\(exit (\d+)`)
	var steps []tourStep
	for _, line := range strings.Split(strings.TrimSpace(rest[:end]), "\n") {
		cmd, comment, _ := strings.Cut(line, "#")
		words, err := shellWords(strings.TrimSpace(cmd))
		require.NoError(t, err, "README tour line %q", line)
		require.Greater(t, len(words), 1, "README tour line %q", line)
		require.Equal(t, "turnlog", words[0], "every tour command is a turnlog command: %q", line)
		step := tourStep{line: line, args: words[1:]}
		if m := exitRe.FindStringSubmatch(comment); m != nil {
			step.exit, _ = strconv.Atoi(m[1])
		}
		steps = append(steps, step)
	}
	return steps
}

// shellWords splits a command line as sh would for the tour's simple
// lines: words separated by spaces, "double" or 'single' quoted words.
// Anything else a shell would interpret is refused, so the README cannot
// grow a line this test runs differently from a shell.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    bool
		quote rune
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		case strings.ContainsRune(`\$|&;<>(){}*?[]~!`+"`", r):
			return nil, fmt.Errorf("%q: the tour test does not interpret %q; keep tour lines to plain words and quotes", s, r)
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("%q: unterminated quote", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// TestReadmeTour runs the README's tour as a newcomer pastes it: serve in
// the background, then every other command, as written, each with the exit
// code the README announces. Only the places differ: the environment
// (TURNLOG_DATA, TURNLOG_LISTEN, TURNLOG_NATS_URL, TURNLOG_HTTP) puts the
// server on free ports and its data in a temp dir, as a user's shell
// could.
func TestReadmeTour(t *testing.T) {
	steps := readmeTour(t)
	require.Equal(t, []string{"serve"}, steps[0].args, "the tour starts the server")
	port := freeport.Port(t)
	t.Setenv("TURNLOG_DATA", t.TempDir())
	t.Setenv("TURNLOG_LISTEN", "127.0.0.1:"+strconv.Itoa(port))
	t.Setenv("TURNLOG_NATS_URL", "nats://127.0.0.1:"+strconv.Itoa(port))
	t.Setenv("TURNLOG_HTTP", "127.0.0.1:"+strconv.Itoa(freeport.Port(t)))
	t.Setenv("NO_COLOR", "1")

	ctx, cancel := context.WithCancel(context.Background())
	serveOut := &syncbuf.Buffer{}
	served := make(chan error, 1)
	go func() {
		root := newRootCmd()
		root.SetOut(serveOut)
		root.SetErr(serveOut)
		root.SetArgs(steps[0].args)
		served <- root.ExecuteContext(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-served:
			assert.NoError(t, err, "serve stops cleanly")
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
	})
	require.Eventually(t, func() bool {
		select {
		case err := <-served:
			require.NoError(t, err, "serve exited: %s", serveOut.String())
		default:
		}
		return strings.Contains(serveOut.String(), "ready; try: ")
	}, 60*time.Second, 50*time.Millisecond, "serve's banner: %s", serveOut.String())

	outputs := map[string]string{}
	for _, step := range steps[1:] {
		root := newRootCmd()
		var out, errOut bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&errOut)
		root.SetArgs(step.args)
		cmdCtx, done := context.WithTimeout(ctx, time.Minute)
		err := root.ExecuteContext(cmdCtx)
		done()
		code := 0
		var ee *exitError
		switch {
		case errors.As(err, &ee):
			code = ee.code
		case err != nil:
			code = 2
		}
		require.Equal(t, step.exit, code, "README tour: %s\nstdout: %s\nstderr: %s\nerr: %v", step.line, out.String(), errOut.String(), err)
		outputs[strings.Join(step.args[:1], " ")+" "+strings.Join(step.args[1:], " ")] = out.String()
	}
	// What a newcomer should see at each step.
	assert.Equal(t, "You said: hello\n", outputs["chat -m hello demo"])
	assert.Contains(t, outputs["chat -m count the words in a b c demo"], "3 words")
	assert.Contains(t, outputs["ls "], "demo")
	assert.Contains(t, outputs["replay demo"], "model call #2")
	assert.Contains(t, outputs["replay --verify demo"], "verified demo: all 3 model inputs match the log")
	assert.Contains(t, outputs["diff-turns demo@7 demo"], "added")
}

func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
		err      string
	}{
		{"plain", "turnlog ls", []string{"turnlog", "ls"}, ""},
		{"double quotes", `turnlog chat -m "a b"  demo`, []string{"turnlog", "chat", "-m", "a b", "demo"}, ""},
		{"single quotes", `x 'it''s'`, []string{"x", "its"}, ""},
		{"empty quotes", `x ""`, []string{"x", ""}, ""},
		{"variable", `x $HOME`, nil, "does not interpret '$'"},
		{"pipe", `x | y`, nil, "does not interpret '|'"},
		{"unterminated", `x "a`, nil, "unterminated quote"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shellWords(tc.in)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// Issue 17: the README used the nats CLI (`nats context add`, `nats pub`)
// before it said how to install it. In README.md and in every docs/ file
// (each may be a reader's first page), the paragraph of its first nats
// command says how, and every install line names the same pinned version.
func TestReadmeSaysHowToInstallTheNatsCLI(t *testing.T) {
	const install = "go install github.com/nats-io/natscli/nats@v0.5.1"
	command := regexp.MustCompile("(`|^)nats [a-z-]+")
	users := 0
	for _, f := range docFiles(t, "..") {
		data, err := os.ReadFile(filepath.Join("..", f))
		require.NoError(t, err)
		for _, p := range strings.Split(string(data), "\n\n") {
			if command.MatchString(p) {
				users++
				assert.Contains(t, p, install, "%s: the paragraph that first uses the nats CLI says how to install it:\n%s", f, p)
				break
			}
		}
		for _, m := range regexp.MustCompile(`go install github.com/nats-io/natscli/nats@\S+`).FindAllString(string(data), -1) {
			assert.Equal(t, install, strings.TrimRight(m, "`;,)."), "%s: one pinned version everywhere", f)
		}
	}
	assert.NotZero(t, users, "the docs use the nats CLI")
}
