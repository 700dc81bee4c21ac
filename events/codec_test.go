package events_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/vmihailenco/msgpack/v5"
)

func TestSamplesCoverTheCatalog(t *testing.T) {
	var got []events.Type
	for _, p := range samplePayloads() {
		got = append(got, p.EventType())
	}
	want := events.NewRegistry().Types()
	slices.Sort(got)
	slices.Sort(want)
	assert.Equal(t, want, got, "samplePayloads must hold exactly one payload per catalog type")
	// Version 2 of the closing events of a model call adds the wire
	// request (events.Wire); every other type is at version 1.
	second := map[events.Type]bool{events.TypeInferenceFinished: true, events.TypeInferenceFailed: true}
	for _, typ := range want {
		v := 1
		if second[typ] {
			v = 2
		}
		assert.Equal(t, v, events.CurrentVersion(typ), "CurrentVersion(%s)", typ)
	}
	assert.Zero(t, events.CurrentVersion("nope.happened"))
}

func TestRoundTripEveryType(t *testing.T) {
	for _, p := range samplePayloads() {
		t.Run(string(p.EventType()), func(t *testing.T) {
			e := newEvent(p)
			require.NoError(t, e.Validate())
			require.Equal(t, p.EventType(), e.Type)
			require.Equal(t, events.CurrentVersion(e.Type), e.Version)

			data, err := events.Encode(e)
			require.NoError(t, err)
			got, err := events.Decode(data)
			require.NoError(t, err)
			require.Len(t, got, 1)

			assert.Equal(t, e, got[0])
			assert.Equal(t, e.ID, got[0].ID)
			assert.Equal(t, time.UTC, got[0].Time.Location())
			assert.True(t, e.Time.Equal(got[0].Time), "time %v, want %v", got[0].Time, e.Time)
			assert.IsType(t, p, got[0].Payload)
		})
	}
}

func TestRoundTripKeepsNanosecondsAndUTC(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		paris = time.FixedZone("CET", 3600)
	}
	tests := []struct {
		name string
		at   time.Time
	}{
		{name: "nanoseconds", at: time.Date(2025, 1, 2, 3, 4, 5, 999_999_999, time.UTC)},
		{name: "local zone becomes UTC", at: time.Date(2025, 7, 1, 12, 0, 0, 1, paris)},
		{name: "before 1970", at: time.Date(1969, 12, 31, 23, 59, 59, 5, time.UTC)},
		{name: "after 2106 (96-bit form)", at: time.Date(2300, 1, 1, 0, 0, 0, 42, time.UTC)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEvent(events.RequestCompleted{})
			e.Time = tc.at
			data, err := events.Encode(e)
			require.NoError(t, err)
			got, err := events.Decode(data)
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.at.UTC(), got[0].Time)
			assert.Equal(t, time.UTC, got[0].Time.Location())
		})
	}
}

func TestMultiEventMessageKeepsOrder(t *testing.T) {
	var in []events.Event
	for i, p := range samplePayloads() {
		e := events.New(testConv, "req-9", i, "test", p)
		in = append(in, e)
	}
	// Reverse so that the order differs from ULID (creation) order: the
	// message's order is what counts, not the IDs'.
	slices.Reverse(in)
	data, err := events.Encode(in...)
	require.NoError(t, err)
	got, err := events.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, in, got)
}

func TestEncodeIsRepeatable(t *testing.T) {
	// The buffer and encoder are pooled: one encode must not leak into the
	// next, and the returned bytes must not be reused by the pool.
	a := newEvent(samplePayloads()[0])
	b := newEvent(events.RequestFailed{Reason: "x"})
	da, err := events.Encode(a)
	require.NoError(t, err)
	keep := bytes.Clone(da)
	db, err := events.Encode(b)
	require.NoError(t, err)
	assert.Equal(t, keep, da, "a later Encode changed an earlier result")
	got, err := events.Decode(db)
	require.NoError(t, err)
	assert.Equal(t, []events.Event{b}, got)
}

// TestAppendEncodeAppendsWhatEncodeReturns: AppendEncode writes the bytes
// Encode returns after what dst holds, leaves that untouched, and writes in
// place when dst has room.
func TestAppendEncodeAppendsWhatEncodeReturns(t *testing.T) {
	var in []events.Event
	for i, p := range samplePayloads() {
		in = append(in, events.New(testConv, "req-9", i, "test", p))
	}
	want, err := events.Encode(in...)
	require.NoError(t, err)

	got, err := events.AppendEncode([]byte("prefix"), in...)
	require.NoError(t, err)
	assert.Equal(t, append([]byte("prefix"), want...), got)

	roomy := make([]byte, 0, len(want)+64)
	got, err = events.AppendEncode(roomy, in...)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Same(t, &roomy[:1][0], &got[0], "written in dst's room, not a new array")

	// The pool keeps nothing of dst: encoding again elsewhere leaves it be.
	keep := bytes.Clone(got)
	_, err = events.Encode(newEvent(events.RequestFailed{Reason: "x"}))
	require.NoError(t, err)
	assert.Equal(t, keep, got)

	_, err = events.AppendEncode(nil)
	assert.ErrorIs(t, err, events.ErrInvalid, "no events")
}

func TestEncodeErrors(t *testing.T) {
	valid := newEvent(events.UserAppended{BlockID: "u1", Text: "hi"})
	tests := []struct {
		name      string
		evs       []events.Event
		wantField string // the FieldError's field, when the error is one
		wantIs    error
		wantText  string
	}{
		{name: "no events", evs: nil, wantIs: events.ErrInvalid, wantText: "no events"},
		{name: "invalid first event", evs: []events.Event{func() events.Event { e := valid; e.Cause = ""; return e }()},
			wantField: "cause", wantIs: events.ErrInvalid, wantText: "event 0"},
		{name: "invalid second event", evs: []events.Event{valid, func() events.Event { e := valid; e.Actor = ""; return e }()},
			wantField: "actor", wantIs: events.ErrInvalid, wantText: "event 1"},
		{name: "invalid payload", evs: []events.Event{newEvent(events.ToolCalled{BlockID: "t", CallID: "c"})},
			wantField: "payload.name", wantIs: events.ErrInvalid},
		{name: "old version", evs: []events.Event{func() events.Event { e := valid; e.Version = 0; return e }()},
			wantField: "version", wantIs: events.ErrInvalid},
		{name: "version not current", evs: []events.Event{func() events.Event { e := valid; e.Version = 2; return e }()},
			wantText: "current version 1"},
		{name: "payload of an unknown type", evs: []events.Event{{
			ID: ulid.Make(), Conversation: testConv, Type: "test.greeted", Version: 1, Time: time.Now(),
			Cause: "r", Actor: "a", Payload: greetedV2{Name: "x"},
		}}, wantIs: events.ErrUnknownEvent},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := events.Encode(tc.evs...)
			require.Error(t, err)
			assert.Nil(t, data)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
			if tc.wantField != "" {
				var fe *events.FieldError
				require.ErrorAs(t, err, &fe)
				assert.Equal(t, tc.wantField, fe.Field)
				assert.Contains(t, err.Error(), tc.wantField)
			}
			assert.Contains(t, err.Error(), tc.wantText)
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	valid, err := events.Encode(newEvent(samplePayloads()[0]))
	require.NoError(t, err)

	tests := []struct {
		name   string
		data   []byte
		wantIs error
	}{
		{name: "nil", data: nil, wantIs: events.ErrInvalid},
		{name: "empty", data: []byte{}, wantIs: events.ErrInvalid},
		{name: "garbage", data: []byte("this is not msgpack at all"), wantIs: events.ErrInvalid},
		{name: "json", data: []byte(`[{"id":"01J","type":"user.appended"}]`), wantIs: events.ErrInvalid},
		{name: "reserved code 0xc1", data: []byte{0xc1}, wantIs: events.ErrInvalid},
		{name: "not an array", data: []byte{0x81, 0xa1, 'a', 0x01}, wantIs: events.ErrInvalid},
		{name: "msgpack nil", data: []byte{0xc0}, wantIs: events.ErrInvalid},
		{name: "empty array", data: []byte{0x90}, wantIs: events.ErrInvalid},
		{name: "array of an int", data: []byte{0x91, 0x01}, wantIs: events.ErrInvalid},
		{name: "array of nil", data: []byte{0x91, 0xc0}, wantIs: events.ErrInvalid},
		{name: "array of an empty map", data: []byte{0x91, 0x80}, wantIs: events.ErrInvalid},
		{name: "no type", data: message(t, wire(t, map[string]any{"type": nil})), wantIs: events.ErrInvalid},
		{name: "array32 claiming 2^31 events", data: []byte{0xdd, 0x80, 0x00, 0x00, 0x00}, wantIs: events.ErrInvalid},
		{name: "array32 claiming 2^32-1 events", data: append([]byte{0xdd, 0xff, 0xff, 0xff, 0xff}, valid[1:]...), wantIs: events.ErrInvalid},
		{name: "array16 claiming more events than bytes", data: append([]byte{0xdc, 0xff, 0xff}, valid[1:]...), wantIs: events.ErrInvalid},
		{name: "array claiming one more event", data: append([]byte{valid[0] + 1}, valid[1:]...), wantIs: events.ErrInvalid},
		{name: "truncated by one byte", data: valid[:len(valid)-1], wantIs: events.ErrInvalid},
		{name: "truncated to half", data: valid[:len(valid)/2], wantIs: events.ErrInvalid},
		{name: "trailing byte", data: append(bytes.Clone(valid), 0x00), wantIs: events.ErrInvalid},
		{name: "trailing message", data: append(bytes.Clone(valid), valid...), wantIs: events.ErrInvalid},
		{name: "unknown type", data: message(t, wire(t, map[string]any{"type": "nope.happened"})), wantIs: events.ErrUnknownEvent},
		{name: "newer version", data: message(t, wire(t, map[string]any{"v": 2})), wantIs: events.ErrNewerVersion},
		{name: "much newer version", data: message(t, wire(t, map[string]any{"v": 1 << 40})), wantIs: events.ErrNewerVersion},
		{name: "version 0", data: message(t, wire(t, map[string]any{"v": 0})), wantIs: events.ErrInvalid},
		{name: "negative version", data: message(t, wire(t, map[string]any{"v": -3})), wantIs: events.ErrInvalid},
		{name: "no version", data: message(t, wire(t, map[string]any{"v": nil})), wantIs: events.ErrInvalid},
		{name: "ID claiming 3 GiB (FuzzDecode)", data: []byte("\x91\x81\xa2id\xdb\xc6\xa4conv\xacconv-01_test"), wantIs: events.ErrInvalid},
		{name: "ID as bin32 claiming 4 GiB", data: message(t, wire(t, map[string]any{"id": rawMsgpack{0xc6, 0xff, 0xff, 0xff, 0xff}})), wantIs: events.ErrInvalid},
		{name: "ID is nil (FuzzDecode: msgpack panicked)", data: message(t, wire(t, map[string]any{"id": rawMsgpack{0xc0}})), wantIs: events.ErrInvalid},
		{name: "time is nil (FuzzDecode: msgpack panicked)", data: []byte("\x91\x89\xa200\xc4\x100000000000000000\xa40000\xac000000000000\xa40000\xb5000000000000000000000\xa100\xa4time\xc000000000"), wantIs: events.ErrInvalid},
		{name: "ID of 15 bytes", data: message(t, wire(t, map[string]any{"id": make([]byte, 15)})), wantIs: events.ErrInvalid},
		{name: "zero ID", data: message(t, wire(t, map[string]any{"id": ulid.ULID{}})), wantIs: events.ErrInvalid},
		{name: "no ID", data: message(t, wire(t, map[string]any{"id": nil})), wantIs: events.ErrInvalid},
		{name: "bad conversation", data: message(t, wire(t, map[string]any{"conv": "a.>"})), wantIs: events.ErrInvalidConversationID},
		{name: "no time", data: message(t, wire(t, map[string]any{"time": nil})), wantIs: events.ErrInvalid},
		{name: "time is a number", data: message(t, wire(t, map[string]any{"time": 12})), wantIs: events.ErrInvalid},
		{name: "payload is a string", data: message(t, wire(t, map[string]any{"payload": "hi"})), wantIs: events.ErrInvalid},
		{name: "payload field of the wrong type", data: message(t, wire(t, map[string]any{"payload": map[string]any{"block_id": 12}})), wantIs: events.ErrInvalid},
		{name: "payload fails validation", data: message(t, wire(t, map[string]any{"payload": map[string]any{"text": "no id"}})), wantIs: events.ErrInvalid},
		{name: "payload array32 claiming 2^31 items", data: message(t, wire(t, map[string]any{
			"type": string(events.TypeBlocksReordered), "payload": rawMsgpack{0x81, 0xa5, 'o', 'r', 'd', 'e', 'r', 0xdd, 0x80, 0x00, 0x00, 0x00},
		})), wantIs: events.ErrInvalid},
		{name: "payload bin32 claiming 4 GiB", data: message(t, wire(t, map[string]any{
			"payload": rawMsgpack{0x81, 0xa4, 't', 'e', 'x', 't', 0xc6, 0xff, 0xff, 0xff, 0xff, 'x'},
		})), wantIs: events.ErrInvalid},
		{name: "payload map32 claiming 2^32-1 entries", data: message(t, wire(t, map[string]any{
			"payload": rawMsgpack{0xdf, 0xff, 0xff, 0xff, 0xff, 0xa1, 'x'},
		})), wantIs: events.ErrInvalid},
		{name: "blocks nested a thousand deep", data: message(t, wire(t, map[string]any{
			"payload": rawMsgpack(append(bytes.Repeat([]byte{0x91}, 1000), 0xc0)),
		})), wantIs: events.ErrInvalid},
		{name: "second event invalid", data: message(t, wire(t, nil), wire(t, map[string]any{"cause": ""})), wantIs: events.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []events.Event
			var err error
			require.NotPanics(t, func() { got, err = events.Decode(tc.data) })
			require.Error(t, err)
			assert.Nil(t, got)
			assert.ErrorIs(t, err, tc.wantIs)
			assert.Contains(t, err.Error(), "decode")
		})
	}
}

func TestDecodeDeepNestingFailsWithoutCrashing(t *testing.T) {
	// 16 MB of nested one-element arrays used to recurse in the msgpack
	// decoder until Go's 1 GB stack limit killed the process.
	if testing.Short() {
		t.Skip("allocates 16 MB")
	}
	tests := []struct {
		name   string
		prefix []byte
	}{
		{name: "as the message", prefix: nil},
		{name: "as the payload", prefix: []byte{0x91, 0x81, 0xa7, 'p', 'a', 'y', 'l', 'o', 'a', 'd'}},
		{name: "as an unknown key", prefix: []byte{0x91, 0x81, 0xa1, 'x'}},
		{name: "in maps", prefix: nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			level := []byte{0x91}
			if tc.name == "in maps" {
				level = []byte{0x81, 0xa0}
			}
			data := append(bytes.Clone(tc.prefix), bytes.Repeat(level, 16<<20/len(level))...)
			data = append(data, 0xc0)
			_, err := events.Decode(data)
			assert.ErrorIs(t, err, events.ErrInvalid)
			assert.Contains(t, err.Error(), "nest deeper")
		})
	}
}

func TestDecodeAllocationIsBoundedByInput(t *testing.T) {
	// A few bytes must not make Decode allocate gigabytes because a length
	// field says so. FuzzDecode found the first of these.
	tests := []struct {
		name string
		data []byte
	}{
		{name: "ID as str32 of 3 GiB", data: []byte("\x91\x81\xa2id\xdb\xc6\xa4conv\xacconv-01_test")},
		{name: "ID as bin32 of 4 GiB", data: message(t, wire(t, map[string]any{"id": rawMsgpack{0xc6, 0xff, 0xff, 0xff, 0xff}}))},
		{name: "cause as str32 of 4 GiB", data: message(t, wire(t, map[string]any{"cause": rawMsgpack{0xdb, 0xff, 0xff, 0xff, 0xff}}))},
		{name: "message claiming 2^31 events", data: []byte{0xdd, 0x80, 0x00, 0x00, 0x00, 0xc0}},
		{name: "fork claiming 2^31 blocks", data: message(t, wire(t, map[string]any{
			"type": string(events.TypeConversationStarted), "payload": rawMsgpack{0x81, 0xa6, 'b', 'l', 'o', 'c', 'k', 's', 0xdd, 0x80, 0x00, 0x00, 0x00},
		}))},
		{name: "a 64 KB message claiming 64 K events", data: append([]byte{0xdc, 0xff, 0xff}, bytes.Repeat([]byte{0xc0}, 1<<16)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			_, err := events.Decode(tc.data)
			runtime.ReadMemStats(&after)
			assert.ErrorIs(t, err, events.ErrInvalid)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated to decode %d bytes", len(tc.data))
		})
	}
}

func TestDecodeNilInEveryField(t *testing.T) {
	// msgpack nil where a value belongs must give a value or an error,
	// never a panic, in every envelope field and every payload field.
	var cases []struct {
		name string
		data []byte
	}
	for _, key := range []string{"id", "conv", "type", "v", "time", "cause", "step", "actor", "payload"} {
		cases = append(cases, struct {
			name string
			data []byte
		}{name: key, data: message(t, wire(t, map[string]any{key: rawMsgpack{0xc0}}))})
	}
	for _, p := range samplePayloads() {
		raw, err := msgpack.Marshal(p)
		require.NoError(t, err)
		var fields map[string]any
		require.NoError(t, msgpack.Unmarshal(raw, &fields))
		for key := range fields {
			payload := maps.Clone(fields)
			payload[key] = nil
			cases = append(cases, struct {
				name string
				data []byte
			}{name: string(p.EventType()) + "." + key, data: message(t, wire(t, map[string]any{"type": string(p.EventType()), "payload": payload}))})
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { _, err = events.Decode(tc.data) })
			if err != nil {
				assert.ErrorIs(t, err, events.ErrInvalid)
				assert.NotContains(t, err.Error(), "panicked")
			}
		})
	}
}

func TestDecodeEveryPrefixFails(t *testing.T) {
	var evs []events.Event
	for _, p := range samplePayloads() {
		evs = append(evs, newEvent(p))
	}
	data, err := events.Encode(evs...)
	require.NoError(t, err)
	for n := 0; n < len(data); n++ {
		got, err := events.Decode(data[:n])
		if !assert.ErrorIs(t, err, events.ErrInvalid, "prefix of %d of %d bytes", n, len(data)) {
			return
		}
		assert.Nil(t, got)
	}
}

func TestDecodeSecondEventErrorNamesIt(t *testing.T) {
	data := message(t, wire(t, nil), wire(t, map[string]any{"type": "nope.happened"}))
	_, err := events.Decode(data)
	require.Error(t, err)
	assert.ErrorIs(t, err, events.ErrUnknownEvent)
	assert.Contains(t, err.Error(), "event 1")
	assert.Contains(t, err.Error(), `"nope.happened"`)
	assert.False(t, errors.Is(err, events.ErrNewerVersion))
}

func TestDecodeHandWrittenMessage(t *testing.T) {
	// The wire form is a contract with every reader ever written: this
	// message is built from the envelope's keys by hand, not by Encode.
	id := ulid.Make()
	at := time.Date(2025, 11, 23, 4, 5, 6, 7, time.UTC)
	data := message(t, wire(t, map[string]any{
		"id": id, "time": at, "step": 4, "unknown_key": "ignored",
		"payload": map[string]any{"block_id": "u1", "text": "hello", "trust": "trusted", "meta": map[string]string{"section": "conversation"}},
	}))
	got, err := events.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, []events.Event{{
		ID: id, Conversation: testConv, Type: events.TypeUserAppended, Version: 1, Time: at,
		Cause: "req-1", Step: 4, Actor: "test",
		Payload: events.UserAppended{BlockID: "u1", Text: "hello", Trust: events.Trusted, Meta: map[string]string{"section": "conversation"}},
	}}, got)
}

func BenchmarkEncode(b *testing.B) {
	benchEncode(b, func(e events.Event) ([]byte, error) { return events.Encode(e) })
}

// benchEncode times encode on a typical one-event step.
func benchEncode(b *testing.B, encode func(events.Event) ([]byte, error)) {
	e := typicalStep(b)
	data, err := encode(e)
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := encode(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	data, err := events.Encode(typicalStep(b))
	require.NoError(b, err)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := events.Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}

// TestEncodeIsDeterministic: the same events always encode to the same
// bytes, maps with many keys included, so that eventlog.Append recognizes a
// retried step as already stored instead of reporting a conflict.
func TestEncodeIsDeterministic(t *testing.T) {
	meta := map[string]string{}
	for i := 0; i < 12; i++ {
		meta[fmt.Sprintf("key-%02d", i)] = fmt.Sprintf("value %d", i)
	}
	evs := []events.Event{
		events.New("c", "r", 0, "test", events.UserAppended{BlockID: "b1", Text: "hi", Meta: meta}),
		events.New("c", "r", 0, "test", events.DataSet{Values: meta}),
	}
	first, err := events.Encode(evs...)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		again, err := events.Encode(evs...)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(first, again) {
			t.Fatalf("encoding %d differs from the first: a retried step would be taken for a conflict", i+1)
		}
	}
}
