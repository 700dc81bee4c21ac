package worker_test

import (
	"context"
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

// TestRequestTakenOverReRunsWithItsProfile: a request under way when an
// app's call landed (its first step stored, then the app's step) ends as
// request.failed after the app's step, in a group of events of its own.
// That failure named no profile, and Rerun read the profile from the
// request's first group, which has no outcome: a request served by the
// "pirate" profile re-ran with the default one, and replay --rerun
// --profiles reported a difference at the pirate's systemprompt.set on a
// conversation nothing had changed. The failure names the profile, and
// Rerun finds the request's outcome wherever it is in the log.
func TestRequestTakenOverReRunsWithItsProfile(t *testing.T) {
	profiles, err := profile.Parse([]byte(`profiles:
  default:
    middlewares: [logging, retry, trust, ordering, reasoningguard]
  pirate:
    system_prompt: "You are a pirate."
    middlewares: [logging, retry, trust, systemprompt, ordering, reasoningguard]
`))
	require.NoError(t, err)
	const conv = "pirate-taken-over"
	srv := natstest.Start(t)
	var l *eventlog.Log
	l = startWorker(t, srv, func(c *worker.Config) {
		c.Profiles = profiles
		c.Fault = appCallAt(&l, conv, "step", 2, nil)
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Profile: "pirate", Text: "ahoy"})
	require.NoError(t, err)
	_, err = worker.Await(ctx, l, conv, req.RequestID, 0, 0)
	require.ErrorIs(t, err, worker.ErrFailed)
	assert.Contains(t, err.Error(), "taken over by an app")

	var failed *events.RequestFailed
	for rec, err := range l.Events(ctx, conv) {
		require.NoError(t, err)
		if p, ok := rec.Payload.(events.RequestFailed); ok && rec.Cause == req.RequestID {
			failed = &p
		}
	}
	require.NotNil(t, failed, "the request ends failed")
	assert.Equal(t, "pirate", failed.Profile, "the failure names the profile the request ran with")

	res, err := replay.Rerun(ctx, l, conv, profiles[profile.DefaultName], replay.WithRequestProfiles(profiles, profile.DefaultName))
	require.NoError(t, err)
	assert.Nil(t, res.Difference, "the request re-runs with the profile that served it")
	assert.Equal(t, map[string]int{"pirate": 1}, res.Profiles)
}
