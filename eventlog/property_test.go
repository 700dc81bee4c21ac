package eventlog_test

import (
	"context"
	"flag"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/eventgen"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// sameTurn compares what a model would see and the position, treating a
// nil and an empty map alike (the snapshot codec drops empty maps).
func sameTurn(t require.TestingT, want, got *projector.Turn, what string) {
	require.Equal(t, want.Events, got.Events, "%s: events", what)
	require.Equal(t, len(want.Blocks), len(got.Blocks), "%s: blocks", what)
	for i := range want.Blocks {
		w, g := want.Blocks[i], got.Blocks[i]
		if len(w.Meta) == 0 && len(g.Meta) == 0 {
			w.Meta, g.Meta = nil, nil
		}
		require.Equal(t, w, g, "%s: block %d", what, i)
	}
	if len(want.Data) > 0 || len(got.Data) > 0 {
		require.Equal(t, want.Data, got.Data, "%s: data", what)
	}
	require.Equal(t, projector.Hash(want), projector.Hash(got), "%s: hash", what)
}

// TestFoldSnapshotAndLoadAtAgree is the property that makes snapshots safe
// as a cache: for random valid histories, the Turn folded from scratch, the
// Turn loaded through snapshot plus tail, and a Turn loaded at a middle
// position and continued are the same.
func TestFoldSnapshotAndLoadAtAgree(t *testing.T) {
	if f := flag.Lookup("rapid.checks"); f != nil {
		if n, _ := strconv.Atoi(f.Value.String()); n < 1000 {
			require.NoError(t, flag.Set("rapid.checks", "1000"))
			defer flag.Set("rapid.checks", f.Value.String())
		}
	}
	ctx := context.Background()
	l := openLog(t, natstest.Start(t), eventlog.WithSnapshotEvery(3))
	var conv atomic.Int64

	rapid.Check(t, func(rt *rapid.T) {
		id := fmt.Sprintf("prop-%d", conv.Add(1))
		model := projector.New(id)
		var all []events.Event
		var seq uint64
		steps := rapid.IntRange(1, 12).Draw(rt, "steps")
		for s := 0; s < steps; s++ {
			evs := eventgen.Step(rt, model, id+"-req", s)
			var err error
			seq, err = l.Append(ctx, id, seq, evs...)
			require.NoError(rt, err)
			all = append(all, evs...)
			if rapid.Bool().Draw(rt, "load now") {
				// Loading mid-way leaves snapshots behind for later loads.
				got, err := l.Load(ctx, id)
				require.NoError(rt, err)
				sameTurn(rt, model, got, "intermediate load")
			}
		}

		scratch := projector.New(id)
		require.NoError(rt, projector.ApplyAll(scratch, all))
		sameTurn(rt, model, scratch, "fold from scratch")

		loaded, err := l.Load(ctx, id)
		require.NoError(rt, err)
		sameTurn(rt, scratch, loaded, "snapshot plus tail")
		require.Equal(rt, seq, loaded.Seq)

		mid := rapid.IntRange(0, len(all)).Draw(rt, "mid")
		at, err := l.LoadAt(ctx, id, mid)
		require.NoError(rt, err)
		require.NoError(rt, projector.ApplyAll(at, all[mid:]))
		sameTurn(rt, scratch, at, fmt.Sprintf("loaded at %d and continued", mid))
	})
}
