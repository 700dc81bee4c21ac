package replay_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// Logs written before the v2 Turn hash record unprefixed (v1) input hashes
// in inference.started; these tests hold that such logs still verify, that
// tampering with them is still caught, and that a hash in a format this
// build does not know is reported rather than passed.

// baseV1 is the v1 hash that turnlog recorded, before v2 existed, for the
// Turn baseEvents fold to (computed by the v1 code at commit 96659c2; the
// same constant freezes the format in projector's tests).
const baseV1 = "4d5018802922e8b42a3249dfc70082c716e4fca1a66aacf0f6390f60d4213665"

// baseEvents fold to projector's test Turn "base": a system prompt at the
// front, one block of every other kind, and data.
func baseEvents() []events.Payload {
	return []events.Payload{
		events.UserAppended{BlockID: "u1", Text: "hello", Meta: map[string]string{events.MetaSection: "conversation"}},
		events.SystemPromptSet{BlockID: "s1", Text: "be brief", Trust: events.Trusted, Meta: map[string]string{events.MetaSystemPromptSource: "global"}},
		events.ReasoningAppended{BlockID: "r1", Text: "hmm", Encrypted: "enc"},
		events.ToolCalled{BlockID: "t1", CallID: "c1", Name: "lookup", Arguments: `{"q":1}`},
		events.ToolResult{BlockID: "t2", CallID: "c1", Text: "42"},
		events.LLMTextAppended{BlockID: "l1", Text: "done"},
		events.DataSet{Values: map[string]string{"tz": "UTC", "page": "/"}},
	}
}

// refHashV1 is the v1 Turn hash written out from its documentation
// (projector.Hash and hashV1), without the projector's code: what an older
// turnlog recorded in input_hash. TestRefHashV1 holds it to a hash the v1
// code itself recorded.
func refHashV1(turn *projector.Turn) string {
	str := func(buf []byte, s string) []byte {
		return append(binary.AppendUvarint(buf, uint64(len(s))), s...)
	}
	strMap := func(buf []byte, m map[string]string) []byte {
		buf = binary.AppendUvarint(buf, uint64(len(m)))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			buf = str(str(buf, k), m[k])
		}
		return buf
	}
	out := str(nil, "turnlog.turn.v1")
	out = binary.AppendUvarint(out, uint64(len(turn.Blocks)))
	for _, b := range turn.Blocks {
		out = str(out, b.ID)
		out = str(out, string(b.Kind))
		out = str(out, b.Text)
		out = str(out, string(b.Trust))
		out = strMap(out, b.Meta)
		out = str(out, b.CallID)
		out = str(out, b.ToolName)
		out = str(out, b.Arguments)
		isError := uint64(0)
		if b.IsError {
			isError = 1
		}
		out = binary.AppendUvarint(out, isError)
		out = str(out, b.Encrypted)
	}
	out = strMap(out, turn.Data)
	sum := sha256.Sum256(out)
	return hex.EncodeToString(sum[:])
}

// inferences lists the positions of a conversation's inference.started
// events and the Turn each model call received, from its timeline.
func inferences(t *testing.T, l *eventlog.Log, conv string) ([]int, []*projector.Turn) {
	t.Helper()
	tl, err := replay.Timeline(context.Background(), l, conv)
	require.NoError(t, err)
	var at []int
	var turns []*projector.Turn
	for _, e := range tl.Events {
		if e.Inference != nil {
			require.NotNil(t, e.Inference.Turn)
			at = append(at, e.N)
			turns = append(turns, e.Inference.Turn)
		}
	}
	return at, turns
}

// recordedAs returns an alter for copyConversation that sets the
// input_hash of the inference.started at each position in hashes.
func recordedAs(hashes map[int]string) func(r *eventlog.Record) {
	return func(r *eventlog.Record) {
		if p, ok := r.Payload.(events.InferenceStarted); ok {
			if h, ok := hashes[r.Pos]; ok {
				p.InputHash = h
				r.Payload = p
			}
		}
	}
}

// verdicts is, for each model call of a conversation's timeline in order,
// whether the timeline marks it verified, and the hashes it shows.
func verdicts(t *testing.T, l *eventlog.Log, conv string) (verified []bool, hashes []string) {
	t.Helper()
	tl, err := replay.Timeline(context.Background(), l, conv)
	require.NoError(t, err)
	for _, e := range tl.Events {
		if e.Inference != nil {
			verified = append(verified, e.Inference.Verified)
			hashes = append(hashes, e.Inference.InputHash)
		}
	}
	return verified, hashes
}

// v1Conversation writes a real conversation through the default profile
// as orig, then copies it to conv with every input_hash in the v1 format,
// as a turnlog from before v2 recorded it. alter, if not nil, then changes
// events of the copy. It returns the positions of the model calls and
// their v1 hashes.
func v1Conversation(t *testing.T, l *eventlog.Log, orig, conv string, alter func(r *eventlog.Record)) ([]int, []string) {
	t.Helper()
	verifiedConversation(t, l, orig)
	at, turns := inferences(t, l, orig)
	require.Len(t, at, 4)
	v1 := map[int]string{}
	var hashes []string
	for i, turn := range turns {
		h := refHashV1(turn)
		require.NotContains(t, h, ":", "v1 hashes have no prefix")
		require.NotEqual(t, strings.TrimPrefix(projector.Hash(turn), "v2:"), h)
		v1[at[i]] = h
		hashes = append(hashes, h)
	}
	set := recordedAs(v1)
	copyConversation(t, l, orig, conv, func(r *eventlog.Record) {
		set(r)
		if alter != nil {
			alter(r)
		}
	})
	return at, hashes
}

// TestRefHashV1 anchors refHashV1 to the old code: the Turn baseEvents fold
// to, in a real log, hashes to what the v1 code recorded for it.
func TestRefHashV1(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	c := newConvo(t, l, "base")
	c.operator("test", baseEvents()...)
	assert.Equal(t, baseV1, refHashV1(c.turn))
	turn, err := l.Load(ctx, "base")
	require.NoError(t, err)
	assert.Equal(t, baseV1, refHashV1(turn), "as the log re-projects it")
}

func TestVerifyAcceptsV1Hashes(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)

	t.Run("a hash the v1 code recorded", func(t *testing.T) {
		c := newConvo(t, l, "old")
		c.operator("test", baseEvents()...)
		at := c.operator(engine.ActorEngine, events.InferenceStarted{InferenceID: "i1", Model: "m", InputHash: baseV1, Blocks: 6,
			SystemPromptID: "s1", SystemPromptHash: projector.HashText("be brief")})
		v, err := replay.Verify(ctx, l, "old")
		require.NoError(t, err)
		assert.True(t, v.OK(), "%+v", v.Mismatches)
		assert.Empty(t, v.Mismatches)
		assert.Equal(t, 1, v.Inferences)

		tl, err := replay.Timeline(ctx, l, "old")
		require.NoError(t, err)
		require.Len(t, tl.Events, at)
		in := tl.Events[at-1].Inference
		require.NotNil(t, in)
		assert.Equal(t, baseV1, in.InputHash)
		assert.True(t, in.Verified)
	})

	t.Run("a real conversation recorded in v1", func(t *testing.T) {
		at, hashes := v1Conversation(t, l, "real-v2", "real-v1", nil)
		v, err := replay.Verify(ctx, l, "real-v1")
		require.NoError(t, err)
		assert.True(t, v.OK(), "%+v", v.Mismatches)
		assert.Empty(t, v.Mismatches)
		assert.Equal(t, len(at), v.Inferences)
		var out bytes.Buffer
		require.NoError(t, v.WriteText(&out))
		assert.Contains(t, out.String(), "verified real-v1: all 4 model inputs match the log")

		verified, shown := verdicts(t, l, "real-v1")
		assert.Equal(t, []bool{true, true, true, true}, verified)
		assert.Equal(t, hashes, shown, "the timeline shows the hashes as recorded")
		out.Reset()
		tl, err := replay.Timeline(ctx, l, "real-v1")
		require.NoError(t, err)
		require.NoError(t, tl.WriteText(&out))
		assert.Equal(t, 4, strings.Count(out.String(), "verified: the log re-projects to this input"))
		assert.NotContains(t, out.String(), "NOT VERIFIED")
	})
}

func TestVerifyCatchesTamperingWithAV1Log(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)

	t.Run("a hash the v1 code recorded", func(t *testing.T) {
		c := newConvo(t, l, "old-tampered")
		ps := baseEvents()
		ps[0] = events.UserAppended{BlockID: "u1", Text: "hello!", Meta: map[string]string{events.MetaSection: "conversation"}}
		c.operator("test", ps...)
		at := c.operator(engine.ActorEngine, events.InferenceStarted{InferenceID: "i1", Model: "m", InputHash: baseV1, Blocks: 6,
			SystemPromptID: "s1", SystemPromptHash: projector.HashText("be brief")})
		v, err := replay.Verify(ctx, l, "old-tampered")
		require.NoError(t, err)
		require.Len(t, v.Mismatches, 1, "%+v", v.Mismatches)
		m := v.Mismatches[0]
		assert.Equal(t, at, m.N)
		assert.Equal(t, "i1", m.InferenceID)
		assert.Equal(t, replay.FieldInputHash, m.Field)
		assert.Equal(t, baseV1, m.Recorded)
		assert.NotContains(t, m.Computed, ":", "recomputed in the format it was recorded in")
		assert.NotEqual(t, baseV1, m.Computed)
		verified, _ := verdicts(t, l, "old-tampered")
		assert.Equal(t, []bool{false}, verified)
	})

	t.Run("a real conversation recorded in v1", func(t *testing.T) {
		// The user's second message (the first before the second model
		// call) is edited in the copy; the model calls after it saw
		// another text than the log now says.
		edited := 0
		at, hashes := v1Conversation(t, l, "tamper-v2", "tamper-v1", func(r *eventlog.Record) {
			if p, ok := r.Payload.(events.UserAppended); ok && p.Text == "count the words in the quick brown fox" {
				edited++
				p.Text = "count the words in the slow brown fox"
				r.Payload = p
			}
		})
		require.Equal(t, 1, edited, "the conversation has the second user message")
		tl, err := replay.Timeline(ctx, l, "tamper-v1")
		require.NoError(t, err)
		var ids []string
		for _, e := range tl.Events {
			if e.Inference != nil {
				ids = append(ids, e.Inference.InferenceID)
			}
		}

		v, err := replay.Verify(ctx, l, "tamper-v1")
		require.NoError(t, err)
		require.False(t, v.OK())
		var named []int
		for _, m := range v.Mismatches {
			named = append(named, m.N)
			assert.Equal(t, replay.FieldInputHash, m.Field, "%+v", m)
		}
		// Calls 2 and 3 (the second request's, around its tool call) and 4
		// (the third request's) all had the edited message in their input.
		assert.Equal(t, at[1:], named)
		m := v.Mismatches[0]
		assert.Equal(t, 2, m.Inference)
		assert.Equal(t, ids[1], m.InferenceID)
		assert.Equal(t, hashes[1], m.Recorded)
		assert.NotContains(t, m.Computed, ":", "recomputed in the format it was recorded in")
		assert.NotEqual(t, m.Recorded, m.Computed)
		assert.Contains(t, m.Message, "model call #2")
		assert.Contains(t, m.Message, "the model's input is not what the log says")
		var out bytes.Buffer
		require.NoError(t, v.WriteText(&out))
		assert.Contains(t, out.String(), "verification of tamper-v1 FAILED: 3 mismatches")

		verified, _ := verdicts(t, l, "tamper-v1")
		assert.Equal(t, []bool{true, false, false, false}, verified)
	})
}

func TestVerifyReportsAnUnknownHashVersion(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	verifiedConversation(t, l, "v2")
	at, turns := inferences(t, l, "v2")
	require.Len(t, at, 4)
	// The right digits under a version this build does not know: it cannot
	// tell what they hash, so it must not pass them.
	current := projector.Hash(turns[2])
	v3 := "v3:" + strings.TrimPrefix(current, "v2:")
	copyConversation(t, l, "v2", "v3", recordedAs(map[int]string{at[2]: v3}))

	v, err := replay.Verify(ctx, l, "v3")
	require.NoError(t, err)
	require.False(t, v.OK(), "turnlog replay --verify exits 1")
	require.Len(t, v.Mismatches, 1, "%+v", v.Mismatches)
	m := v.Mismatches[0]
	assert.Equal(t, at[2], m.N)
	assert.Equal(t, 3, m.Inference)
	assert.Equal(t, replay.FieldInputHash, m.Field)
	assert.Equal(t, v3, m.Recorded)
	assert.Equal(t, current, m.Computed, "the hash in the current format")
	assert.Contains(t, m.Message, "model call #3")
	assert.Contains(t, m.Message, "cannot be checked")
	assert.Contains(t, m.Message, `unknown turn hash version "v3"`)
	assert.Contains(t, m.Message, "v2 and unprefixed (v1)", "it says which versions this build knows")

	var out bytes.Buffer
	require.NoError(t, v.WriteText(&out))
	assert.Contains(t, out.String(), fmt.Sprintf("MISMATCH event %d (seq %d) input_hash:", m.N, m.Seq))
	assert.Contains(t, out.String(), `unknown turn hash version "v3"`)
	assert.Contains(t, out.String(), "verification of v3 FAILED: 1 mismatch (")

	verified, _ := verdicts(t, l, "v3")
	assert.Equal(t, []bool{true, true, false, true}, verified)
}
