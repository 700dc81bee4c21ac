package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// TestImportedLaterSystemMessageStaysWhereItIs: an imported file's later
// system or developer message is a message of the conversation, not its
// prompt, and stays where it is. The ordering middleware of the default
// profile used to move it from index 3 to index 1 (blocks.reordered).
func TestImportedLaterSystemMessageStaysWhereItIs(t *testing.T) {
	set, err := profile.BuiltIn()
	require.NoError(t, err)
	srv := natstest.Start(t)
	l := startWorker(t, srv, func(c *worker.Config) { c.Profiles = set })
	ctx := context.Background()
	const conv = "later-dev"
	c, err := replay.ParseChat(chatFile(t, conv, [2]string{"system", terse}, [2]string{"user", "hi"},
		[2]string{"assistant", "Hello."}, [2]string{"developer", "From now on, answer in French."}))
	require.NoError(t, err)
	plan, err := replay.PlanImport(conv+".json", c, time.Now())
	require.NoError(t, err)
	_, err = replay.Import(ctx, l, []*replay.ImportPlan{plan})
	require.NoError(t, err)
	before, err := l.Load(ctx, conv)
	require.NoError(t, err)
	require.Equal(t, events.KindSystem, before.Blocks[3].Kind)
	dev := before.Blocks[3].ID

	askAs(t, l, conv, profile.DefaultName, "et maintenant ?")

	after, err := l.Load(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, 3, after.Index(dev), "the developer message stays at index 3")
	assert.Equal(t, before.Blocks[0].ID, after.Blocks[0].ID, "the imported prompt stays the prompt")
	h, err := replay.Timeline(ctx, l, conv)
	require.NoError(t, err)
	for _, e := range h.Events {
		if e.Type == events.TypeBlocksReordered {
			assert.NotEqual(t, middlewares.ActorOrdering, e.Actor, "ordering moved blocks: %s", e.Summary)
		}
	}
	chk, err := replay.Check(ctx, l, conv)
	require.NoError(t, err)
	assert.Empty(t, chk.Findings)
}
