package replay_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/replay"
)

// compactedConversation is a conversation of the default profile with a
// small compaction budget, long enough to be compacted once. It returns the
// profile and the position of the summarizing call's inference.started.
func compactedConversation(t *testing.T, l *eventlog.Log, conv string) (int, events.InferenceStarted) {
	t.Helper()
	p := templateProfile(t, l)
	p.CompactAfterBlocks = 10
	loop := loopOf(t, p).Loop
	c := newConvo(t, l, conv)
	for i := range 5 {
		c.request(loop, fmt.Sprintf("message %d", i), nil)
	}
	var at int
	var started events.InferenceStarted
	for r, err := range l.Events(context.Background(), conv) {
		require.NoError(t, err)
		if p, ok := r.Payload.(events.InferenceStarted); ok && p.Purpose == middlewares.PurposeCompaction {
			require.Zero(t, at, "one summary")
			at, started = r.Pos, p
		}
	}
	require.NotZero(t, at, "the summarizer's model call is an inference.started of the conversation")
	return at, started
}

// Issue 14 §3: the compaction summarizer's model call is in the log like
// any model call (it was not), with what its input was made of, and
// `replay --verify` checks that input (a tampered one is caught).
func TestVerifyCoversTheSummarizer(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	at, started := compactedConversation(t, l, "summed")
	assert.Equal(t, middlewares.PurposeCompaction, started.Purpose)
	assert.Contains(t, started.Instructions, middlewares.DefaultSummaryInstruction)
	assert.GreaterOrEqual(t, len(started.InputBlocks), 2)
	assert.Equal(t, 2, started.Blocks, "the instructions and the transcript")
	assert.NotEmpty(t, started.TemplateHash, "the instructions start with the rebuilt template prompt")

	var finished, compacted int
	for r, err := range l.Events(ctx, "summed") {
		require.NoError(t, err)
		switch p := r.Payload.(type) {
		case events.InferenceFinished:
			if p.InferenceID == started.InferenceID {
				finished = r.Pos
			}
		case events.TurnCompacted:
			compacted = r.Pos
			assert.Equal(t, started.InputBlocks, p.Removed, "the summary's input is what was compacted")
		}
	}
	assert.Greater(t, finished, at, "the call is closed")
	assert.Greater(t, compacted, finished, "before its summary is used")

	v, err := replay.Verify(ctx, l, "summed")
	require.NoError(t, err)
	assert.True(t, v.OK(), "%+v", v.Mismatches)

	tests := []struct {
		name  string
		alter func(p *events.InferenceStarted)
	}{
		{name: "other instructions recorded", alter: func(p *events.InferenceStarted) { p.Instructions = "Summarize kindly." }},
		{name: "a block left out of the recorded input", alter: func(p *events.InferenceStarted) { p.InputBlocks = p.InputBlocks[1:] }},
		{name: "blocks swapped", alter: func(p *events.InferenceStarted) {
			p.InputBlocks = slices.Clone(p.InputBlocks)
			p.InputBlocks[0], p.InputBlocks[1] = p.InputBlocks[1], p.InputBlocks[0]
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conv := fmt.Sprintf("summed-tampered%d", i)
			copyConversation(t, l, "summed", conv, func(r *eventlog.Record) {
				if p, ok := r.Payload.(events.InferenceStarted); ok && r.Pos == at {
					tc.alter(&p)
					r.Payload = p
				}
			})
			v, err := replay.Verify(ctx, l, conv)
			require.NoError(t, err)
			require.False(t, v.OK(), "the tampered summary input must be caught")
			assert.Equal(t, at, v.Mismatches[0].N)
			assert.Equal(t, replay.FieldInputHash, v.Mismatches[0].Field)
		})
	}

	t.Run("a block named that is not in the conversation", func(t *testing.T) {
		copyConversation(t, l, "summed", "summed-ghost", func(r *eventlog.Record) {
			if p, ok := r.Payload.(events.InferenceStarted); ok && r.Pos == at {
				p.InputBlocks = append(slices.Clone(p.InputBlocks), "01NOTABLOCK")
				r.Payload = p
			}
		})
		v, err := replay.Verify(ctx, l, "summed-ghost")
		require.NoError(t, err)
		require.False(t, v.OK())
		assert.Equal(t, at, v.Mismatches[0].N)
		assert.Contains(t, v.Mismatches[0].Message, "01NOTABLOCK")
	})
}

// A re-run replays the summarizing call too, and compares its record.
func TestRerunComparesTheSummarizer(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	compactedConversation(t, l, "summed-rerun")
	p := templateProfile(t, l)
	p.CompactAfterBlocks = 10
	res, err := replay.Rerun(ctx, l, "summed-rerun", p)
	require.NoError(t, err)
	assert.True(t, res.OK(), "%+v", res.Difference)
}
