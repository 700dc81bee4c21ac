package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// auditEnv is an embedded server listening on a local port, its log, and
// a worker with the default profiles answering chat requests.
type auditEnv struct {
	t   *testing.T
	url string
	log *eventlog.Log
}

func newAuditEnv(t *testing.T, withWorker bool) *auditEnv {
	t.Helper()
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	e := &auditEnv{t: t, url: srv.ClientURL(), log: l}
	require.NotEmpty(t, e.url)
	if withWorker {
		profiles, err := profile.Load("")
		require.NoError(t, err)
		runWorker(t, worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 5 * time.Second,
			ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})
	}
	return e
}

// ask sends a chat request and waits until the worker finished it.
func (e *auditEnv) ask(conv, text string) {
	e.t.Helper()
	e.send(worker.Request{Conversation: conv, Text: text, Data: map[string]string{"tz": "UTC"}})
}

// send sends chat request r and waits until the worker finished it.
func (e *auditEnv) send(r worker.Request) {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := e.log.Load(ctx, r.Conversation)
	require.NoError(e.t, err)
	req, err := worker.Send(ctx, e.log, r)
	require.NoError(e.t, err)
	_, err = worker.Await(ctx, e.log, r.Conversation, req.RequestID, turn.Seq, turn.Events)
	require.NoError(e.t, err)
}

// run executes turnlog against the env as main would and returns stdout,
// stderr and the exit code.
func (e *auditEnv) run(stdin string, args ...string) (string, string, int) {
	e.t.Helper()
	return e.runIn(strings.NewReader(stdin), args...)
}

// runIn is run with stdin read from in.
func (e *auditEnv) runIn(in io.Reader, args ...string) (string, string, int) {
	e.t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetIn(in)
	if len(args) > 0 {
		// Before a "--", after which every word is an argument.
		at := len(args)
		if i := slices.Index(args, "--"); i >= 0 {
			at = i
		}
		args = slices.Concat(args[:at], []string{"--nats-url", e.url}, args[at:])
	}
	root.SetArgs(args)
	err := root.Execute()
	code := 0
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		code = ee.code
		if ee.err != nil {
			errOut.WriteString(ee.err.Error())
		}
	case err != nil:
		code = 2
		errOut.WriteString(err.Error())
	}
	return out.String(), errOut.String(), code
}

// file writes data to a file in the test's temp dir.
func (e *auditEnv) file(name, data string) string {
	e.t.Helper()
	path := filepath.Join(e.t.TempDir(), name)
	require.NoError(e.t, os.WriteFile(path, []byte(data), 0o600))
	return path
}

func TestActorWorkerMatchesTheWorker(t *testing.T) {
	assert.Equal(t, worker.ActorWorker, replay.ActorWorker, "replay --rerun recognises requests by the worker's actor")
}

func TestReplayCommand(t *testing.T) {
	e := newAuditEnv(t, true)
	e.ask("c1", "hello")
	e.ask("c1", "count the words in a b c")
	e.ask("c1", "thanks")

	t.Run("timeline", func(t *testing.T) {
		out, errOut, code := e.run("", "replay", "c1")
		require.Equal(t, 0, code, errOut)
		assert.True(t, strings.HasPrefix(out, "conversation c1\n"))
		assert.Contains(t, out, " events, 4 model calls\n")
		assert.Contains(t, out, "model call #1 (event ")
		assert.Contains(t, out, "model call #4 (event ")
		assert.Contains(t, out, "system prompt ")
		assert.Contains(t, out, "user.appended")
		assert.NotContains(t, out, "NOT VERIFIED")
		assert.Empty(t, errOut, "no progress when stderr is not a terminal")
	})
	t.Run("json", func(t *testing.T) {
		out, _, code := e.run("", "replay", "c1", "-o", "json")
		require.Equal(t, 0, code)
		var doc replayJSONDoc
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		assert.Equal(t, "c1", doc.Conversation)
		assert.Equal(t, 4, doc.Inferences)
		require.NotEmpty(t, doc.Events)
		assert.Equal(t, 1, doc.Events[0].N)
		var calls int
		for _, ev := range doc.Events {
			if ev.Inference != nil {
				calls++
				assert.True(t, ev.Inference.Verified)
				assert.NotNil(t, ev.Inference.SystemPrompt)
				assert.NotEmpty(t, ev.Inference.Turn.Blocks)
			}
		}
		assert.Equal(t, 4, calls)
	})
	t.Run("at", func(t *testing.T) {
		out, _, code := e.run("", "replay", "c1", "--at", "3")
		require.Equal(t, 0, code)
		assert.Contains(t, out, "c1@3 (of ")
		out, _, code = e.run("", "replay", "c1", "--at", "2", "-o", "json")
		require.Equal(t, 0, code)
		var pt replay.Point
		require.NoError(t, json.Unmarshal([]byte(out), &pt))
		assert.Equal(t, 2, pt.At)
		assert.Equal(t, 2, pt.Turn.Events)
		_, errOut, code := e.run("", "replay", "c1", "--at", "9999")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "use an n from 0 to")
	})
	t.Run("inference", func(t *testing.T) {
		out, _, code := e.run("", "replay", "c1", "--inference", "2")
		require.Equal(t, 0, code)
		assert.Contains(t, out, "model call #2 ")
		assert.NotContains(t, out, "model call #1 ")
		assert.Contains(t, out, "turn: ")
		out, _, code = e.run("", "replay", "c1", "--inference", "3", "-o", "json")
		require.Equal(t, 0, code)
		var doc struct {
			Conversation string `json:"conversation"`
			Event        struct {
				Type      string `json:"type"`
				Inference struct {
					Index int `json:"index"`
				} `json:"inference"`
			} `json:"event"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &doc))
		assert.Equal(t, "c1", doc.Conversation)
		assert.Equal(t, "inference.started", doc.Event.Type)
		assert.Equal(t, 3, doc.Event.Inference.Index)
		_, errOut, code := e.run("", "replay", "c1", "--inference", "5")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "c1 has 4 model calls")
	})
	t.Run("one model call, in the singular", func(t *testing.T) {
		e.ask("one", "hello")
		out, errOut, code := e.run("", "replay", "one")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "completed after 1 model call\n")
		assert.Contains(t, out, " events, 1 model call\n")
		_, errOut, code = e.run("", "replay", "one", "--inference", "2")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "--inference 2: one has 1 model call")
		assert.NotContains(t, errOut, "1 model calls")
	})
	t.Run("verify", func(t *testing.T) {
		out, errOut, code := e.run("", "replay", "c1", "--verify")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "verified c1: all 4 model inputs match the log")

		// A copy with the model's first answer edited afterwards.
		var seq, cur uint64
		var msg []events.Event
		var edited int
		flush := func() {
			if len(msg) > 0 {
				var err error
				seq, err = e.log.Append(context.Background(), "c1-tampered", seq, msg...)
				require.NoError(t, err)
				msg = nil
			}
		}
		for r, err := range e.log.Events(context.Background(), "c1") {
			require.NoError(t, err)
			if r.Seq != cur {
				flush()
				cur = r.Seq
			}
			r.Conversation, r.Cause = "c1-tampered", "t-"+r.Cause
			if p, ok := r.Payload.(events.LLMTextAppended); ok && edited == 0 {
				edited = r.Pos
				p.Text = "something the model never said"
				r.Payload = p
			}
			msg = append(msg, r.Event)
		}
		flush()
		require.Positive(t, edited)

		out, errOut, code = e.run("", "replay", "c1-tampered", "--verify")
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "MISMATCH event ")
		assert.Contains(t, out, "input_hash")
		assert.Contains(t, errOut, "mismatches")
		out, _, code = e.run("", "replay", "c1-tampered", "--verify", "-o", "json")
		assert.Equal(t, 1, code)
		var v replay.Verification
		require.NoError(t, json.Unmarshal([]byte(out), &v))
		require.NotEmpty(t, v.Mismatches)
		assert.Greater(t, v.Mismatches[0].N, edited, "the first model call after the edit")
		assert.Contains(t, out, fmt.Sprintf(`"n": %d`, v.Mismatches[0].N))
	})
	t.Run("rerun", func(t *testing.T) {
		out, errOut, code := e.run("", "replay", "c1", "--rerun")
		require.Equal(t, 0, code, errOut+out)
		assert.Contains(t, out, "re-ran 3 requests of c1")
		assert.Contains(t, out, "no difference")

		changed := e.file("profiles.yaml", `profiles:
  default:
    system_prompt: "You are a pirate."
    middlewares: [logging, retry, trust, systemprompt, ordering, reasoningguard, compaction]
`)
		out, errOut, code = e.run("", "replay", "c1", "--rerun", "--profiles", changed)
		assert.Equal(t, 1, code, errOut)
		assert.Contains(t, out, "DIFFERENCE at event ")
		assert.Contains(t, out, "You are a pirate.")
		assert.Contains(t, errOut, "differs from the log at event")
		out, _, code = e.run("", "replay", "c1", "--rerun", "--profiles", changed, "-o", "json")
		assert.Equal(t, 1, code)
		var res replay.RerunResult
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		require.NotNil(t, res.Difference)
		assert.Equal(t, events.TypeSystemPromptSet, res.Difference.Log.Type)

		_, errOut, code = e.run("", "replay", "c1", "--rerun", "--profile", "nope")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, `--profile "nope"`)
	})
	t.Run("rerun without the profile's engine", func(t *testing.T) {
		// The default chain, with an engine this binary does not have
		// (an audit binary with a team's middlewares but not its
		// provider): rerun replays the model's recorded outputs, so it
		// needs only the middlewares, and says the engine is absent.
		noEngine := e.file("no-engine.yaml", `profiles:
  default:
    provider: acme.gpt
    options:
      acme.gpt: {endpoint: "http://127.0.0.1:9"}
    middlewares: [logging, retry, trust, template, ordering, reasoningguard, compaction]
    compact_after_blocks: 200
    max_iterations: 8
`)
		note := `provider "acme.gpt" is not registered in this binary; the re-run does not need it, since it replays the model's recorded outputs`
		out, errOut, code := e.run("", "replay", "c1", "--rerun", "--profiles", noEngine)
		require.Equal(t, 0, code, errOut+out)
		assert.Contains(t, out, "re-ran 3 requests of c1")
		assert.Contains(t, out, "no difference")
		assert.Contains(t, out, "note: "+note)
		out, errOut, code = e.run("", "replay", "c1", "--rerun", "--profiles", noEngine, "-o", "json")
		require.Equal(t, 0, code, errOut+out)
		var res replay.RerunResult
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.Nil(t, res.Difference)
		assert.Equal(t, []string{note}, res.Notes)

		// The middlewares are what it runs: one this binary lacks is
		// still an error, naming it.
		noMiddleware := e.file("no-middleware.yaml", "profiles:\n  default:\n    provider: acme.gpt\n    middlewares: [logging, acme.sysprompt]\n")
		_, errOut, code = e.run("", "replay", "c1", "--rerun", "--profiles", noMiddleware)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, `middleware "acme.sysprompt" is not registered in this binary`)

		// Without a note when the binary has the engine.
		out, _, code = e.run("", "replay", "c1", "--rerun", "-o", "json")
		require.Equal(t, 0, code)
		assert.NotContains(t, out, `"notes"`)
	})
	t.Run("errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"replay", "nobody"},
			{"replay", "bad.id"},
			{"replay", "c1", "-o", "yaml"},
			{"replay", "c1", "--verify", "--rerun"},
			{"replay"},
		} {
			_, errOut, code := e.run("", args...)
			assert.Equal(t, 2, code, "%v", args)
			assert.NotEmpty(t, errOut, "%v says what is wrong", args)
		}
	})
}

// replayJSONDoc is the documented JSON of `replay -o json`, read the way
// a tool would.
type replayJSONDoc struct {
	Conversation string `json:"conversation"`
	Inferences   int    `json:"inferences"`
	Events       []struct {
		N         int             `json:"n"`
		Seq       uint64          `json:"seq"`
		Time      time.Time       `json:"time"`
		Type      string          `json:"type"`
		Actor     string          `json:"actor"`
		Cause     string          `json:"cause"`
		Step      int             `json:"step"`
		Summary   string          `json:"summary"`
		Payload   json.RawMessage `json:"payload"`
		Inference *struct {
			Index        int                  `json:"index"`
			N            int                  `json:"n"`
			InferenceID  string               `json:"inference_id"`
			Model        string               `json:"model"`
			InputHash    string               `json:"input_hash"`
			Verified     bool                 `json:"verified"`
			SystemPrompt *replay.ActivePrompt `json:"system_prompt"`
			Turn         struct {
				Blocks []events.Block    `json:"blocks"`
				Data   map[string]string `json:"data"`
			} `json:"turn"`
		} `json:"inference"`
	} `json:"events"`
}

func TestProgressOnlyOnATerminal(t *testing.T) {
	var buf bytes.Buffer
	assert.Nil(t, newProgress(&buf, "x"), "a buffer is not a terminal")
	var nilProgress *progress
	nilProgress.update(5) // does nothing, does not panic
	nilProgress.done()

	old := isTerminal
	isTerminal = func(any) bool { return true }
	t.Cleanup(func() { isTerminal = old })
	p := newProgress(&buf, "replay c")
	require.NotNil(t, p)
	p.update(10)
	assert.Empty(t, buf.String(), "nothing in the first moment")
	p.start = time.Now().Add(-time.Second)
	p.update(2048)
	assert.Contains(t, buf.String(), "replay c: 2048 events read")
	p.done()
	assert.True(t, strings.HasSuffix(buf.String(), "\r\x1b[K"), "done clears the line")
}
