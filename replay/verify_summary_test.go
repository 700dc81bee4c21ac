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
	built := loopOf(t, p)
	loop := built.Loop
	c := newConvo(t, l, conv)
	c.model = built.Model // as a worker does: "scripted"; the summarizer asks the engine's default
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
	texts := map[string]string{} // block IDs by text
	for r, err := range l.Events(ctx, "summed") {
		require.NoError(t, err)
		switch p := r.Payload.(type) {
		case events.UserAppended:
			texts[p.Text] = p.BlockID
		case events.LLMTextAppended:
			texts[p.Text] = p.BlockID
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

	// The timeline shows the call with its own input and instructions.
	h, err := replay.Timeline(ctx, l, "summed")
	require.NoError(t, err)
	inf := h.Events[at-1].Inference
	require.NotNil(t, inf)
	assert.Equal(t, middlewares.PurposeCompaction, inf.Purpose)
	assert.True(t, inf.Verified)
	require.NotNil(t, inf.SystemPrompt)
	assert.Equal(t, started.Instructions, inf.SystemPrompt.Text)
	assert.Equal(t, started.TemplateHash, inf.SystemPrompt.TemplateHash)
	require.NotNil(t, inf.Turn)
	assert.Equal(t, []events.Kind{events.KindSystem, events.KindUser}, []events.Kind{inf.Turn.Blocks[0].Kind, inf.Turn.Blocks[1].Kind})

	tests := []struct {
		name  string
		alter func(p *events.InferenceStarted)
	}{
		{name: "other instructions recorded", alter: func(p *events.InferenceStarted) { p.Instructions = "Summarize kindly." }},
		{name: "a block left out of the recorded input", alter: func(p *events.InferenceStarted) { p.InputBlocks = p.InputBlocks[1:] }},
		{name: "a user's and the model's blocks swapped", alter: func(p *events.InferenceStarted) {
			// (Reasoning is not in a summary's input: moving it changes
			// nothing the model saw.)
			p.InputBlocks = slices.Clone(p.InputBlocks)
			u, a := slices.Index(p.InputBlocks, texts["message 0"]), slices.Index(p.InputBlocks, texts["You said: message 0"])
			require.True(t, u >= 0 && a >= 0)
			p.InputBlocks[u], p.InputBlocks[a] = p.InputBlocks[a], p.InputBlocks[u]
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

// The template text a prompt records is the template its hash names: a
// re-run renders that text again, so --verify checks it.
func TestVerifyChecksTheRecordedTemplate(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	p := templateProfile(t, l)
	c := newConvo(t, l, "tmpl")
	c.request(loopOf(t, p).Loop, "hello", nil)
	v, err := replay.Verify(ctx, l, "tmpl")
	require.NoError(t, err)
	require.True(t, v.OK(), "%+v", v.Mismatches)

	var at int
	copyConversation(t, l, "tmpl", "tmpl-tampered", func(r *eventlog.Record) {
		if p, ok := r.Payload.(events.SystemPromptSet); ok {
			require.NotEmpty(t, p.Template)
			p.Template = "You obey the user in everything."
			r.Payload, at = p, r.Pos
		}
	})
	v, err = replay.Verify(ctx, l, "tmpl-tampered")
	require.NoError(t, err)
	require.Len(t, v.Mismatches, 1)
	assert.Equal(t, replay.FieldTemplate, v.Mismatches[0].Field)
	assert.Equal(t, at, v.Mismatches[0].N)
}
