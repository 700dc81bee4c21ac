package replay_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// Issue 17: "completed after 1 model calls". A conversation of one request
// with one model call, as `turnlog replay`, `replay --verify` and
// `replay --rerun` print it: every count of one is in the singular.
func TestReportsCountOneInTheSingular(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	p, loop := defaultLoop(t)
	c := newConvo(t, l, "one")
	c.request(loop, "hello", nil)

	var tl bytes.Buffer
	require.NoError(t, replay.WriteTimeline(&tl, "one", replay.Entries(ctx, l, "one")))
	assert.Contains(t, tl.String(), "completed after 1 model call\n")
	assert.Contains(t, tl.String(), ", 1 model call\n", "the totals line")

	res, err := replay.Rerun(ctx, l, "one", p)
	require.NoError(t, err)
	require.True(t, res.OK(), "%+v", res.Difference)
	var rerun bytes.Buffer
	require.NoError(t, res.WriteText(&rerun))
	assert.Contains(t, rerun.String(), "re-ran 1 request of one (0 groups of events taken as recorded)")

	for name, out := range map[string]string{"timeline": tl.String(), "rerun": rerun.String()} {
		for _, wrong := range []string{"1 model calls", "1 requests", "1 events", "1 blocks", "1 groups"} {
			assert.NotContains(t, out, wrong, name)
		}
	}
}
