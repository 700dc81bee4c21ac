package replay_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// dropping is an engine's renderer that does not send the blocks of some
// kinds, and says so in its notes as the real engines do (engine.BlockNote);
// known false: it knows no rendering.
type dropping struct {
	kinds   []events.Kind
	unknown bool
	inputs  int
}

func (d *dropping) Knows(string) bool { return !d.unknown }

func (d *dropping) RenderWire(_ context.Context, _ events.Wire, in *projector.Turn) ([]byte, []engine.BlockNote, error) {
	d.inputs++
	var notes []engine.BlockNote
	for i, b := range in.Blocks {
		for _, k := range d.kinds {
			if b.Kind == k {
				notes = append(notes, engine.BlockNote{Index: i, ID: b.ID, Note: "not sent: this API has no input for " + string(k)})
			}
		}
	}
	return []byte("{}"), notes, nil
}

// TestCheckAppliesTheRulesToTheRequestAsSent: with the engine's renderer,
// --check notes per call the blocks the request did not carry, and
// applies the rules of one input to what it carried: a tool result sent
// without its call is a finding the Turn's check cannot see.
func TestCheckAppliesTheRulesToTheRequestAsSent(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	verifiedConversation(t, l, "real")

	plain, err := replay.Check(ctx, l, "real")
	require.NoError(t, err)
	require.True(t, plain.OK(), "%+v", plain.Findings)
	assert.Empty(t, plain.Wire)

	// Reasoning not sent: noted at each call whose input holds some, no
	// finding.
	d := &dropping{kinds: []events.Kind{events.KindReasoning}}
	c, err := replay.Check(ctx, l, "real", replay.WithWire(d))
	require.NoError(t, err)
	assert.True(t, c.OK(), "%+v", c.Findings)
	require.NotEmpty(t, c.Wire)
	assert.Positive(t, d.inputs)
	for _, cw := range c.Wire {
		assert.Positive(t, cw.Call)
		for _, n := range cw.Notes {
			assert.Contains(t, n.Note, "not sent")
		}
	}
	var text bytes.Buffer
	require.NoError(t, c.WriteText(&text))
	assert.Contains(t, text.String(), "the request did not carry every block as the Turn holds it")
	assert.Contains(t, text.String(), "-> not sent: this API has no input for reasoning")

	// Tool calls not sent: their results go without them.
	c, err = replay.Check(ctx, l, "real", replay.WithWire(&dropping{kinds: []events.Kind{events.KindToolCall}}))
	require.NoError(t, err)
	require.False(t, c.OK())
	rules := map[check.Rule]bool{}
	for _, f := range c.Findings {
		rules[f.Rule] = true
		assert.Positive(t, f.Call)
		assert.Contains(t, f.Detail, "in the request as sent")
	}
	assert.True(t, rules[check.RuleToolResultWithoutCall], "%+v", c.Findings)

	// A rendering the build does not know: counted, not checked.
	c, err = replay.Check(ctx, l, "real", replay.WithWire(&dropping{unknown: true}))
	require.NoError(t, err)
	assert.True(t, c.OK())
	assert.Positive(t, c.WireUnchecked)
}
