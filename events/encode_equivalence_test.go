package events_test

import (
	"bytes"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/eventgen"
	"github.com/turnlog/turnlog/projector"
	"pgregory.net/rapid"
)

// Encode writes the envelope by hand; these tests hold its output to the
// bytes of the msgpack reflection it replaced (events.EncodeReflect), since
// eventlog.Append compares a retried step's bytes with the stored ones.

// requireOldBytes fails unless got is what the reflection encoder writes
// for evs. msgpack writes a map's entries in Go's random iteration order,
// so for a payload with a map of two or more keys the old encoder itself
// writes one of several byte strings; got must then be one of them, which
// the loop finds by encoding again (4 orders at most among the samples).
func requireOldBytes(tb helperT, got []byte, evs ...events.Event) {
	tb.Helper()
	var want []byte
	for try := 0; try < 500; try++ {
		var err error
		want, err = events.EncodeReflect(evs...)
		require.NoError(tb, err)
		if bytes.Equal(got, want) {
			return
		}
	}
	require.Equal(tb, want, got, "Encode's bytes differ from the reflection encoder's")
}

// helperT is what both *testing.T and *rapid.T offer.
type helperT interface {
	require.TestingT
	Helper()
}

func encodeMatches(tb helperT, evs ...events.Event) {
	tb.Helper()
	got, err := events.Encode(evs...)
	require.NoError(tb, err)
	requireOldBytes(tb, got, evs...)
}

func TestEncodeMatchesReflection(t *testing.T) {
	at := time.Date(2025, 11, 23, 4, 5, 6, 7, time.UTC)
	with := func(p events.Payload, change func(*events.Event)) []events.Event {
		e := newEvent(p)
		e.Time = at
		change(&e)
		return []events.Event{e}
	}
	same := func(*events.Event) {}
	user := events.UserAppended{BlockID: "u1", Text: "hi"}
	var all []events.Event
	for _, p := range samplePayloads() {
		all = append(all, newEvent(oneKeyMaps(p)))
	}
	many := func(n int) []events.Event {
		out := make([]events.Event, n)
		for i := range out {
			out[i] = all[i%len(all)]
			out[i].Step = i
		}
		return out
	}

	tests := []struct {
		name string
		evs  []events.Event
	}{
		{name: "every type in one message", evs: all},
		{name: "15 events (fixarray)", evs: many(15)},
		{name: "16 events (array 16)", evs: many(16)},
		{name: "300 events", evs: many(300)},
		{name: "nil meta", evs: with(events.UserAppended{BlockID: "u1", Meta: nil}, same)},
		{name: "empty meta", evs: with(events.UserAppended{BlockID: "u1", Meta: map[string]string{}}, same)},
		{name: "empty text and untrusted", evs: with(events.UserAppended{BlockID: "u1"}, same)},
		{name: "nil order", evs: with(events.BlocksReordered{}, same)},
		{name: "empty order", evs: with(events.BlocksReordered{Order: []string{}}, same)},
		{name: "empty blocks and data", evs: with(events.ConversationStarted{Blocks: []events.Block{}, Data: map[string]string{}}, same)},
		{name: "zero conversation.started", evs: with(events.ConversationStarted{}, same)},
		{name: "compaction without summary", evs: with(events.TurnCompacted{Removed: []string{"a"}}, same)},
		{name: "data unset only, empty values", evs: with(events.DataSet{Values: map[string]string{}, Unset: []string{"x"}}, same)},
		{name: "request completed with zero inferences", evs: with(events.RequestCompleted{}, same)},
		{name: "negative and huge durations", evs: []events.Event{
			with(events.InferenceFinished{InferenceID: "i", Duration: -1}, same)[0],
			with(events.InferenceFailed{InferenceID: "i", Duration: math.MaxInt64}, same)[0],
			with(events.InferenceFailed{InferenceID: "i", Partial: []events.Block{}}, same)[0],
			with(events.InferenceStarted{InferenceID: "i", InputHash: "h", Blocks: -5}, same)[0],
		}},
		{name: "non-ASCII everywhere", evs: with(events.UserAppended{BlockID: "ü", Text: "héllo 世界 🎉\x00", Meta: map[string]string{"ключ": "значение"}}, func(e *events.Event) {
			e.Cause, e.Actor = "запрос-1", "работник 🎉"
		})},
		{name: "max ULID", evs: with(user, func(e *events.Event) {
			e.ID = ulid.ULID{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
		})},
		{name: "ULID with leading zero bytes", evs: with(user, func(e *events.Event) { e.ID = ulid.ULID{15: 1} })},
	}
	for _, step := range []int{0, 1, 127, 128, 255, 256, 65535, 65536, math.MaxUint32, math.MaxUint32 + 1, math.MaxInt64} {
		tests = append(tests, struct {
			name string
			evs  []events.Event
		}{fmt.Sprintf("step %d", step), with(user, func(e *events.Event) { e.Step = step })})
	}
	for _, n := range []int{0, 1, 31, 32, 255, 256, 65535, 65536, 70000} {
		tests = append(tests, struct {
			name string
			evs  []events.Event
		}{fmt.Sprintf("%d-byte strings", n), with(events.UserAppended{BlockID: "u1", Text: strings.Repeat("t", n)}, func(e *events.Event) {
			e.Cause = strings.Repeat("c", max(n, 1))
			e.Actor = strings.Repeat("é", max(n, 2)/2)
			e.Conversation = strings.Repeat("x", min(max(n, 1), 128))
		})})
	}
	paris := time.FixedZone("CET", 3600)
	for _, tm := range []time.Time{
		time.Unix(0, 1), time.Unix(1, 0), // 32-bit form needs zero nanoseconds
		time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		time.Date(2025, 1, 2, 3, 4, 5, 999_999_999, time.UTC),
		time.Date(2025, 7, 1, 12, 0, 0, 1, paris),
		time.Date(2106, 2, 7, 6, 28, 15, 0, time.UTC), // 2^32-1 s: the last 32-bit time
		time.Date(2106, 2, 7, 6, 28, 16, 0, time.UTC), // 2^32 s: 64-bit form
		time.Unix(1<<34-1, 999_999_999),               // the last 64-bit time
		time.Unix(1<<34, 0),                           // 96-bit form
		time.Date(1969, 12, 31, 23, 59, 59, 5, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, paris),
	} {
		tests = append(tests, struct {
			name string
			evs  []events.Event
		}{"time " + tm.Format(time.RFC3339Nano), with(user, func(e *events.Event) { e.Time = tm })})
	}
	for _, p := range samplePayloads() {
		tests = append(tests, struct {
			name string
			evs  []events.Event
		}{"sample " + string(p.EventType()), []events.Event{newEvent(p)}})
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			encodeMatches(t, tc.evs...)
		})
	}
}

// TestEncodeMatchesReflectionErrors checks that Encode refuses what the old
// encoder refused, with the same message.
func TestEncodeMatchesReflectionErrors(t *testing.T) {
	good := newEvent(events.UserAppended{BlockID: "u1"})
	tests := []struct {
		name   string
		change func(*events.Event)
	}{
		{name: "zero time", change: func(e *events.Event) { e.Time = time.Time{} }},
		{name: "negative step", change: func(e *events.Event) { e.Step = -1 }},
		{name: "zero ID", change: func(e *events.Event) { e.ID = ulid.ULID{} }},
		{name: "unknown type", change: func(e *events.Event) { e.Type = "nope.happened" }},
		{name: "old version", change: func(e *events.Event) { e.Version = 2 }},
		{name: "no payload", change: func(e *events.Event) { e.Payload = nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := good
			tc.change(&bad)
			_, wantErr := events.EncodeReflect(good, bad)
			require.Error(t, wantErr)
			_, err := events.Encode(good, bad)
			require.Error(t, err)
			assert.Equal(t, wantErr.Error(), err.Error())
		})
	}
	_, err := events.Encode()
	assert.ErrorIs(t, err, events.ErrInvalid)
}

// TestEncodeMatchesReflectionOnHistories encodes random, realistic
// histories step by step, as eventlog.Append does, and with arbitrary
// envelope values.
func TestEncodeMatchesReflectionOnHistories(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		conv := rapid.StringMatching(`[A-Za-z0-9_-]{1,40}`).Draw(rt, "conv")
		turn := projector.New(conv)
		steps := rapid.IntRange(1, 20).Draw(rt, "steps")
		for s := 0; s < steps; s++ {
			evs := eventgen.Step(rt, turn, conv+"-req", s)
			if rapid.Bool().Draw(rt, "odd envelope") {
				for i := range evs {
					evs[i].Cause = rapid.StringN(1, 300, -1).Draw(rt, "cause")
					evs[i].Actor = rapid.StringN(1, 40, -1).Draw(rt, "actor")
					evs[i].Step = rapid.IntRange(0, math.MaxInt).Draw(rt, "step")
					evs[i].Time = time.Unix(rapid.Int64Range(-1<<40, 1<<40).Draw(rt, "sec"), rapid.Int64Range(0, 999_999_999).Draw(rt, "nsec"))
					evs[i].ID = ulid.ULID(rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(rt, "id"))
					evs[i].ID[15] |= 1 // never the zero ULID, which Validate rejects
				}
			}
			got, err := events.Encode(evs...)
			require.NoError(rt, err)
			requireOldBytes(rt, got, evs...)
		}
	})
}

// oneKeyMaps returns p with each of its maps cut down to its smallest key,
// so that its encoding is one byte string (see requireOldBytes) even when
// many such payloads share a message.
func oneKeyMaps(p events.Payload) events.Payload {
	one := func(m map[string]string) map[string]string {
		if len(m) < 2 {
			return m
		}
		k := slices.Min(slices.Collect(maps.Keys(m)))
		return map[string]string{k: m[k]}
	}
	blocks := func(bs []events.Block) []events.Block {
		out := slices.Clone(bs)
		for i := range out {
			out[i].Meta = one(out[i].Meta)
		}
		return out
	}
	switch v := p.(type) {
	case events.ConversationStarted:
		v.Blocks, v.Data = blocks(v.Blocks), one(v.Data)
		return v
	case events.UserAppended:
		v.Meta = one(v.Meta)
		return v
	case events.SystemPromptSet:
		v.Meta, v.Variables = one(v.Meta), one(v.Variables)
		return v
	case events.SystemPromptReplaced:
		v.Meta, v.Variables = one(v.Meta), one(v.Variables)
		return v
	case events.ReasoningAppended:
		v.Meta = one(v.Meta)
		return v
	case events.LLMTextAppended:
		v.Meta = one(v.Meta)
		return v
	case events.ToolCalled:
		v.Meta = one(v.Meta)
		return v
	case events.ToolResult:
		v.Meta = one(v.Meta)
		return v
	case events.BlockAnnotated:
		v.Meta = one(v.Meta)
		return v
	case events.BlockSplit:
		v.Into = blocks(v.Into)
		return v
	case events.InferenceFailed:
		v.Partial = blocks(v.Partial)
		return v
	case events.BlockInserted:
		v.Block.Meta = one(v.Block.Meta)
		return v
	case events.TurnCompacted:
		if v.Summary != nil {
			s := *v.Summary
			s.Meta = one(s.Meta)
			v.Summary = &s
		}
		return v
	case events.DataSet:
		v.Values = one(v.Values)
		return v
	case events.MessageRemoved:
		v.Headers = one(v.Headers)
		return v
	}
	return p
}

// BenchmarkEncodeReflect is BenchmarkEncode with the reflection encoder
// Encode replaced, to compare the two in one binary.
func BenchmarkEncodeReflect(b *testing.B) {
	benchEncode(b, func(e events.Event) ([]byte, error) { return events.EncodeReflect(e) })
}

// TestEncodeMatchesReflectionOnPayloads draws payloads of every type with
// each field independently set or not: empty and long strings, non-ASCII
// text, ints of every width, nil, empty and one-key maps, nil and empty
// slices. An invalid one must be refused as before.
func TestEncodeMatchesReflectionOnPayloads(t *testing.T) {
	str := rapid.OneOf(rapid.Just(""), rapid.String(), rapid.StringN(25, 300, -1), rapid.StringMatching(`[a-z]{1,8}`))
	id := rapid.OneOf(rapid.StringN(1, 40, -1), rapid.StringMatching(`[a-z0-9]{1,8}`))
	num := rapid.OneOf(rapid.Just(0), rapid.Int(), rapid.IntRange(-40_000, 70_000))
	dur := rapid.Custom(func(t *rapid.T) time.Duration { return time.Duration(rapid.Int64().Draw(t, "duration")) })
	trust := rapid.SampledFrom([]events.Trust{events.Untrusted, events.Trusted})
	// A wire request: valid, empty, or with a hash that is not one (refused).
	wire := rapid.Custom(func(t *rapid.T) events.Wire {
		return events.Wire{SHA256: rapid.OneOf(rapid.Just(""), rapid.StringMatching(`[0-9a-f]{64}`), str).Draw(t, "sha256"),
			Version: str.Draw(t, "version"), Params: str.Draw(t, "params")}
	})
	meta := rapid.OneOf(
		rapid.Just[map[string]string](nil),
		rapid.Just(map[string]string{}),
		rapid.Custom(func(t *rapid.T) map[string]string {
			return map[string]string{id.Draw(t, "key"): str.Draw(t, "value")}
		}),
	)
	strs := rapid.OneOf(rapid.Just[[]string](nil), rapid.Just([]string{}), rapid.SliceOfN(id, 1, 20))
	// Spans in order from 0 on: valid in a text long enough, refused in a
	// shorter one; sometimes out of order, refused whatever the text.
	spans := rapid.OneOf(
		rapid.Just[[]events.Span](nil),
		rapid.Just([]events.Span{}),
		rapid.Custom(func(t *rapid.T) []events.Span {
			n := rapid.IntRange(1, 5).Draw(t, "spans")
			out := make([]events.Span, n)
			at := 0
			for i := range out {
				start := at + rapid.IntRange(0, 40).Draw(t, "gap")
				end := start + rapid.IntRange(1, 200).Draw(t, "len")
				if rapid.IntRange(0, 20).Draw(t, "disorder") == 0 {
					start, end = end, start
				}
				out[i] = events.Span{Start: start, End: end, Var: rapid.SampledFrom([]string{"", "file:AGENTS.md", "system:time"}).Draw(t, "var")}
				at = end
			}
			return out
		}),
	)
	block := rapid.Custom(func(t *rapid.T) events.Block {
		return events.Block{
			ID: id.Draw(t, "id"), Kind: rapid.SampledFrom([]events.Kind{events.KindSystem, events.KindUser, events.KindToolCall, events.KindToolResult, events.KindOther}).Draw(t, "kind"),
			Text: str.Draw(t, "text"), Trust: trust.Draw(t, "trust"), Meta: meta.Draw(t, "meta"),
			CallID: id.Draw(t, "call_id"), ToolName: str.Draw(t, "tool"), Arguments: str.Draw(t, "args"),
			IsError: rapid.Bool().Draw(t, "is_error"), Encrypted: str.Draw(t, "enc"), Untrusted: spans.Draw(t, "untrusted"),
		}
	})
	blocks := rapid.OneOf(rapid.Just[[]events.Block](nil), rapid.Just([]events.Block{}), rapid.SliceOfN(block, 1, 17))
	payloads := []*rapid.Generator[events.Payload]{
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.ConversationStarted{Profile: str.Draw(t, "profile"), ForkedFrom: rapid.SampledFrom([]string{"", "origin-1"}).Draw(t, "from"),
				ForkedAt: num.Draw(t, "at"), Blocks: blocks.Draw(t, "blocks"), Data: meta.Draw(t, "data")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.UserAppended{BlockID: id.Draw(t, "id"), Text: str.Draw(t, "text"), Trust: trust.Draw(t, "trust"), Meta: meta.Draw(t, "meta")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.SystemPromptSet{BlockID: id.Draw(t, "id"), Text: str.Draw(t, "text"), Index: rapid.IntRange(0, math.MaxInt).Draw(t, "index"),
				Trust: trust.Draw(t, "trust"), Meta: meta.Draw(t, "meta"), TemplateHash: str.Draw(t, "hash"), Variables: meta.Draw(t, "vars"),
				Untrusted: spans.Draw(t, "untrusted"), Template: str.Draw(t, "template")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.SystemPromptReplaced{BlockID: id.Draw(t, "id"), Text: str.Draw(t, "text"), Previous: str.Draw(t, "previous"),
				Meta: meta.Draw(t, "meta"), TemplateHash: str.Draw(t, "hash"), Variables: meta.Draw(t, "vars"), Reason: str.Draw(t, "reason"),
				PreviousSource: str.Draw(t, "prev_source"), Untrusted: spans.Draw(t, "untrusted"), Template: str.Draw(t, "template"),
				PreviousTemplateHash: str.Draw(t, "previous hash")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.SystemPromptLocked{BlockID: id.Draw(t, "id"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.SystemPromptUnlocked{BlockID: id.Draw(t, "id"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.ReasoningAppended{BlockID: id.Draw(t, "id"), Text: str.Draw(t, "text"), Encrypted: str.Draw(t, "enc"), Meta: meta.Draw(t, "meta")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.LLMTextAppended{BlockID: id.Draw(t, "id"), Text: str.Draw(t, "text"), Meta: meta.Draw(t, "meta")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.ToolCalled{BlockID: id.Draw(t, "id"), CallID: id.Draw(t, "call"), Name: id.Draw(t, "name"), Arguments: str.Draw(t, "args"), Meta: meta.Draw(t, "meta")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.ToolResult{BlockID: id.Draw(t, "id"), CallID: id.Draw(t, "call"), Text: str.Draw(t, "text"), IsError: rapid.Bool().Draw(t, "err"), Meta: meta.Draw(t, "meta")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.BlocksReordered{Order: strs.Draw(t, "order"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.BlocksRemoved{BlockIDs: strs.Draw(t, "ids"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.BlockAnnotated{BlockID: id.Draw(t, "id"), Meta: meta.Draw(t, "meta"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.BlockSplit{BlockID: id.Draw(t, "id"), Into: blocks.Draw(t, "into"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.BlockInserted{Index: rapid.IntRange(-1, math.MaxInt).Draw(t, "index"), Block: block.Draw(t, "block"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			var summary *events.Block
			if rapid.Bool().Draw(t, "summary") {
				b := block.Draw(t, "block")
				summary = &b
			}
			return events.TurnCompacted{Removed: strs.Draw(t, "removed"), Summary: summary, Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.DataSet{Values: meta.Draw(t, "values"), Unset: strs.Draw(t, "unset")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.InferenceStarted{InferenceID: id.Draw(t, "id"), Model: str.Draw(t, "model"), InputHash: id.Draw(t, "hash"),
				SystemPromptID: str.Draw(t, "sp"), SystemPromptHash: str.Draw(t, "sph"), Blocks: num.Draw(t, "blocks"), Purpose: str.Draw(t, "purpose"),
				Instructions: str.Draw(t, "instructions"), InputBlocks: strs.Draw(t, "input blocks"), TemplateHash: str.Draw(t, "template hash"),
				Untrusted: spans.Draw(t, "untrusted")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.InferenceFinished{InferenceID: id.Draw(t, "id"), PromptTokens: num.Draw(t, "prompt"), CompletionTokens: num.Draw(t, "completion"),
				StopReason: str.Draw(t, "stop"), Duration: dur.Draw(t, "duration"), ResponseID: str.Draw(t, "response id"),
				OtherChoices: str.Draw(t, "other choices"), Logprobs: str.Draw(t, "logprobs"), LogprobsOmitted: num.Draw(t, "logprobs omitted"),
				Wire: wire.Draw(t, "wire")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.InferenceFailed{InferenceID: id.Draw(t, "id"), Error: str.Draw(t, "error"), Transient: rapid.Bool().Draw(t, "transient"), Duration: dur.Draw(t, "duration"),
				Partial: blocks.Draw(t, "partial"), Wire: wire.Draw(t, "wire")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.RequestCompleted{Inferences: num.Draw(t, "inferences")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.RequestFailed{Reason: str.Draw(t, "reason"), TakenOver: rapid.Bool().Draw(t, "taken_over")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.MessageRemoved{Seq: num.Draw(t, "seq"), Size: num.Draw(t, "size"),
				SHA256: rapid.OneOf(rapid.StringMatching(`[0-9a-f]{64}`), str).Draw(t, "sha256"), Headers: meta.Draw(t, "headers"), Reason: str.Draw(t, "reason")}
		}),
		rapid.Custom(func(t *rapid.T) events.Payload {
			return events.FindingRecorded{InferenceID: id.Draw(t, "id"), Rule: str.Draw(t, "rule"), Detail: str.Draw(t, "detail"),
				Blocks: rapid.SliceOfN(str, 0, 3).Draw(t, "blocks")}
		}),
	}
	require.Len(t, payloads, len(samplePayloads()), "one generator per catalog type")
	payload := rapid.OneOf(payloads...)

	var valid, invalid int
	rapid.Check(t, func(rt *rapid.T) {
		evs := make([]events.Event, rapid.IntRange(1, 3).Draw(rt, "events"))
		for i := range evs {
			p := payload.Draw(rt, "payload")
			if rapid.Bool().Draw(rt, "by pointer") {
				p = pointerTo(p) // a pointer is left to reflection
			}
			evs[i] = newEvent(p)
		}
		want, wantErr := events.EncodeReflect(evs...)
		got, err := events.Encode(evs...)
		if wantErr != nil {
			invalid++
			require.Error(rt, err)
			require.Equal(rt, wantErr.Error(), err.Error())
			return
		}
		valid++
		require.NoError(rt, err)
		require.Equal(rt, want, got)
	})
	t.Logf("%d valid messages, %d invalid", valid, invalid)
	assert.Greater(t, valid, 0)
}

// pointerTo returns a pointer to a copy of p.
func pointerTo(p events.Payload) events.Payload {
	switch v := p.(type) {
	case events.UserAppended:
		return &v
	case events.BlockSplit:
		return &v
	case events.InferenceFinished:
		return &v
	case events.RequestCompleted:
		return &v
	}
	return p
}
