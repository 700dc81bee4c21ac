package cli

import (
	"context"
	"encoding/json"
	"log/slog"
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

// pirateProfiles is a profiles file of two profiles: "default" sets no
// system prompt, "pirate" does: a request re-run with the other one
// differs at once.
const pirateProfiles = `profiles:
  default:
    middlewares: [logging, retry, trust, ordering, reasoningguard]
  pirate:
    system_prompt: "You are a pirate."
    middlewares: [logging, retry, trust, systemprompt, ordering, reasoningguard]
`

// A request is re-run with the profile that served it: the workers record
// it on the request's outcome (request.completed, request.failed), so
// `replay --rerun --profiles FILE` of a conversation served by another
// profile than "default", or by several, re-runs what ran; --profile NAME
// still re-runs every request with NAME (a candidate profile tried on old
// conversations), and a profiles file that lacks the profile a request
// names is refused, naming it.
func TestRerunUsesTheProfileEachRequestRan(t *testing.T) {
	t.Setenv("TURNLOG_PROFILES", "")
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	e := &auditEnv{t: t, url: srv.ClientURL(), log: l}
	profiles, err := profile.Parse([]byte(pirateProfiles))
	require.NoError(t, err)
	runWorker(t, worker.Config{Log: l, Conn: srv.Conn, Profiles: profiles, AckWait: 5 * time.Second,
		ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})
	ask := func(conv, prof, text string) {
		t.Helper()
		e.send(worker.Request{Conversation: conv, Profile: prof, Text: text})
	}
	ask("sea", "pirate", "ahoy")
	ask("sea", "pirate", "where is the treasure")
	ask("mixed", "", "hi")
	ask("mixed", "pirate", "and now?")
	file := e.file("profiles.yaml", pirateProfiles)

	for rec, err := range l.Events(context.Background(), "sea") {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.RequestCompleted); ok {
			assert.Equal(t, "pirate", p.Profile, "the outcome names the profile that served the request")
		}
	}
	for _, conv := range []string{"sea", "mixed"} {
		out, errOut, code := e.run("", "replay", conv, "--rerun", "--profiles", file)
		require.Equal(t, 0, code, errOut+out)
		assert.Contains(t, out, "no difference", conv)
	}
	out, _, code := e.run("", "replay", "mixed", "--rerun", "--profiles", file, "-o", "json")
	require.Equal(t, 0, code, out)
	var res replay.RerunResult
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.Equal(t, map[string]int{"default": 1, "pirate": 1}, res.Profiles, "says which profile re-ran how many requests")

	out, _, code = e.run("", "replay", "sea", "--rerun", "--profiles", file, "--profile", "default")
	assert.Equal(t, 1, code, "--profile re-runs every request with that profile")
	assert.Contains(t, out, "DIFFERENCE")

	lacking := e.file("lacking.yaml", "profiles:\n  default:\n    middlewares: [logging, retry, trust, ordering, reasoningguard]\n")
	_, errOut, code := e.run("", "replay", "sea", "--rerun", "--profiles", lacking)
	assert.NotZero(t, code)
	assert.Contains(t, errOut, `"pirate"`, "names the profile the file lacks")
	assert.Contains(t, errOut, "--profile", "says how to re-run with another profile")
}
