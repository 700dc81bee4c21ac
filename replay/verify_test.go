package replay_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// verifiedConversation writes a real conversation through the default
// profile: system prompt, reasoning, tool calls, data.
func verifiedConversation(t *testing.T, l *eventlog.Log, conv string) *convo {
	t.Helper()
	_, loop := defaultLoop(t)
	c := newConvo(t, l, conv)
	c.request(loop, "hello", map[string]string{"tz": "UTC"})
	c.request(loop, "count the words in the quick brown fox", nil)
	c.request(loop, "thanks", map[string]string{"tz": "CET"})
	return c
}

func TestVerifyPassesOnRealLogs(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	c := verifiedConversation(t, l, "real")
	var progress []int
	v, err := replay.Verify(ctx, l, "real", replay.WithProgress(func(n int) { progress = append(progress, n) }))
	require.NoError(t, err)
	assert.True(t, v.OK(), "%+v", v.Mismatches)
	assert.Empty(t, v.Mismatches)
	assert.NotNil(t, v.Mismatches, "never null in JSON")
	assert.Equal(t, 4, v.Inferences)
	assert.Equal(t, c.turn.Events, v.Events)
	require.NotEmpty(t, progress)
	assert.Equal(t, c.turn.Events, progress[len(progress)-1])

	var out bytes.Buffer
	require.NoError(t, v.WriteText(&out))
	assert.Contains(t, out.String(), "verified real: all 4 model inputs match the log")
}

func TestVerifyNamesTheAlteredEvent(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	verifiedConversation(t, l, "orig")

	// Where the model calls are, in the original.
	tl, err := replay.Timeline(ctx, l, "orig")
	require.NoError(t, err)
	var calls, closes []int
	for _, e := range tl.Events {
		if e.Inference != nil {
			calls = append(calls, e.N)
		}
		if e.Type == events.TypeInferenceFinished {
			closes = append(closes, e.N)
		}
	}
	require.Len(t, calls, 4)
	require.Len(t, closes, 4)

	tests := []struct {
		name string
		// alter changes one event of the copy.
		alter func(r *eventlog.Record)
		// wantN is the event the first mismatch names; wantField its field.
		wantN     int
		wantField string
	}{
		{
			name: "the model's first answer was edited afterwards",
			alter: func(r *eventlog.Record) {
				if p, ok := r.Payload.(events.LLMTextAppended); ok && r.Pos < calls[1] {
					p.Text = "You said something else"
					r.Payload = p
				}
			},
			wantN: calls[1], wantField: replay.FieldInputHash,
		},
		{
			name: "the user's message was edited after the first call",
			alter: func(r *eventlog.Record) {
				if p, ok := r.Payload.(events.UserAppended); ok && r.Pos == 1 {
					p.Text = "hello!"
					r.Payload = p
				}
			},
			wantN: calls[0], wantField: replay.FieldInputHash,
		},
		{
			name: "a recorded input hash was forged",
			alter: func(r *eventlog.Record) {
				if p, ok := r.Payload.(events.InferenceStarted); ok && r.Pos == calls[2] {
					p.InputHash = fmt.Sprintf("%064x", 42)
					r.Payload = p
				}
			},
			wantN: calls[2], wantField: replay.FieldInputHash,
		},
		{
			// What a writer going on after its conversation was erased
			// leaves: an answer for a call the log never opened.
			name: "a model call's answer has no start",
			alter: func(r *eventlog.Record) {
				if p, ok := r.Payload.(events.InferenceStarted); ok && r.Pos == calls[3] {
					p.InferenceID += "-other"
					r.Payload = p
				}
			},
			wantN: closes[3], wantField: replay.FieldInferenceID,
		},
		{
			name: "the system prompt was swapped",
			alter: func(r *eventlog.Record) {
				if p, ok := r.Payload.(events.SystemPromptSet); ok {
					p.Text = "You obey the user in everything."
					r.Payload = p
				}
			},
			wantN: calls[0], wantField: replay.FieldInputHash,
		},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conv := fmt.Sprintf("tampered%d", i)
			copyConversation(t, l, "orig", conv, tc.alter)
			v, err := replay.Verify(ctx, l, conv)
			require.NoError(t, err)
			require.False(t, v.OK())
			m := v.Mismatches[0]
			assert.Equal(t, tc.wantN, m.N)
			assert.Equal(t, tc.wantField, m.Field)
			assert.Positive(t, m.Seq)
			assert.NotEqual(t, m.Recorded, m.Computed)
			assert.Contains(t, m.Message, fmt.Sprintf("event %d, seq %d", m.N, m.Seq))
			var out bytes.Buffer
			require.NoError(t, v.WriteText(&out))
			assert.Contains(t, out.String(), fmt.Sprintf("MISMATCH event %d (seq %d) %s", m.N, m.Seq, tc.wantField))
			assert.Contains(t, out.String(), "FAILED")
		})
	}

	t.Run("an unaltered copy verifies", func(t *testing.T) {
		copyConversation(t, l, "orig", "faithful", func(*eventlog.Record) {})
		v, err := replay.Verify(ctx, l, "faithful")
		require.NoError(t, err)
		assert.True(t, v.OK(), "%+v", v.Mismatches)
	})

	t.Run("the prompt hash and ID are checked on their own", func(t *testing.T) {
		c := newConvo(t, l, "forged")
		c.operator("test", events.SystemPromptSet{BlockID: "s", Text: "be brief", Trust: events.Trusted},
			events.UserAppended{BlockID: "u", Text: "hi"})
		// Right input hash, wrong prompt facts.
		at := c.operator(engine.ActorEngine, events.InferenceStarted{InferenceID: "i1", InputHash: projector.Hash(c.turn), Blocks: 2,
			SystemPromptID: "other", SystemPromptHash: "abc"})
		v, err := replay.Verify(ctx, l, "forged")
		require.NoError(t, err)
		var fields []string
		for _, m := range v.Mismatches {
			assert.Equal(t, at, m.N)
			assert.Equal(t, 1, m.Inference)
			assert.Equal(t, "i1", m.InferenceID)
			fields = append(fields, m.Field)
		}
		assert.Equal(t, []string{replay.FieldSystemPromptID, replay.FieldSystemPromptHash}, fields)
	})

	t.Run("an undecodable message is a mismatch", func(t *testing.T) {
		copyConversation(t, l, "orig", "garbage", func(*eventlog.Record) {})
		_, err := l.JetStream().Publish(ctx, l.Names().EventsSubject("garbage"), []byte("not msgpack"), jetstream.WithMsgID("damaged:0"))
		require.NoError(t, err)
		v, err := replay.Verify(ctx, l, "garbage")
		require.NoError(t, err)
		require.Len(t, v.Mismatches, 1)
		assert.Equal(t, replay.FieldMessage, v.Mismatches[0].Field)
		assert.Equal(t, 4, v.Inferences, "everything before it was checked")
	})

	t.Run("no such conversation", func(t *testing.T) {
		_, err := replay.Verify(ctx, l, "nobody")
		assert.ErrorIs(t, err, replay.ErrNoEvents)
	})
}
