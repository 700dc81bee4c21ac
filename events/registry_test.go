package events_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/vmihailenco/msgpack/v5"
)

// typeGreeted is an event type that exists only in these tests, to evolve
// a schema without touching the real catalog.
const typeGreeted events.Type = "test.greeted"

// greetedV2 is version 2 of test.greeted. Version 1 called the field
// "nick"; version 2 renamed it to "name" and added "polite".
type greetedV2 struct {
	Name   string `msgpack:"name"`
	Polite bool   `msgpack:"polite,omitempty"`
}

func (greetedV2) EventType() events.Type { return typeGreeted }

func (p greetedV2) Validate() error {
	if p.Name == "" {
		return &events.FieldError{Field: "name", Msg: "is empty"}
	}
	return nil
}

// renameNick is the upcaster from test.greeted version 1 to 2.
func renameNick(old map[string]any) (map[string]any, error) {
	nick, ok := old["nick"].(string)
	if !ok {
		return nil, fmt.Errorf("nick is %T, want a string", old["nick"])
	}
	delete(old, "nick")
	old["name"] = nick
	return old, nil
}

// greetedRegistry returns the catalog plus test.greeted at version current
// with the given upcasters (from version i+1 to i+2).
func greetedRegistry(t *testing.T, current int, ups ...events.Upcaster) *events.Registry {
	t.Helper()
	r := events.NewRegistry()
	events.Register[greetedV2](r, current)
	for i, up := range ups {
		require.NoError(t, r.RegisterUpcaster(typeGreeted, i+1, up))
	}
	return r
}

func greetedMessage(t *testing.T, v int, payload map[string]any) []byte {
	t.Helper()
	return message(t, wire(t, map[string]any{"type": string(typeGreeted), "v": v, "payload": payload}))
}

func TestUpcast(t *testing.T) {
	politeFromV2 := func(old map[string]any) (map[string]any, error) {
		old["polite"] = true
		return old, nil
	}
	tests := []struct {
		name     string
		registry func(t *testing.T) *events.Registry
		version  int
		payload  map[string]any
		want     greetedV2
		wantVer  int
	}{
		{
			name:     "v1 upcast to v2",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, renameNick) },
			version:  1, payload: map[string]any{"nick": "ada"},
			want: greetedV2{Name: "ada"}, wantVer: 2,
		},
		{
			name:     "v2 read as is",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, renameNick) },
			version:  2, payload: map[string]any{"name": "bob", "polite": true},
			want: greetedV2{Name: "bob", Polite: true}, wantVer: 2,
		},
		{
			name:     "v1 through two upcasters",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 3, renameNick, politeFromV2) },
			version:  1, payload: map[string]any{"nick": "cy"},
			want: greetedV2{Name: "cy", Polite: true}, wantVer: 3,
		},
		{
			name:     "v2 through the last upcaster only",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 3, renameNick, politeFromV2) },
			version:  2, payload: map[string]any{"name": "di"},
			want: greetedV2{Name: "di", Polite: true}, wantVer: 3,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.registry(t)
			got, err := r.Decode(greetedMessage(t, tc.version, tc.payload))
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, typeGreeted, got[0].Type)
			assert.Equal(t, tc.wantVer, got[0].Version)
			assert.Equal(t, tc.want, got[0].Payload)

			// The upcast event is a current one: it re-encodes as such.
			data, err := r.Encode(got...)
			require.NoError(t, err)
			again, err := r.Decode(data)
			require.NoError(t, err)
			assert.Equal(t, got, again)
		})
	}
}

func TestUpcastErrors(t *testing.T) {
	failing := func(map[string]any) (map[string]any, error) { return nil, errors.New("cannot lift") }
	tests := []struct {
		name     string
		registry func(t *testing.T) *events.Registry
		data     func(t *testing.T) []byte
		wantIs   error
		wantText string
	}{
		{
			name:     "missing upcaster",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2) },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 1, map[string]any{"nick": "ada"}) },
			wantIs:   events.ErrInvalid, wantText: "test.greeted version 1: invalid event: no upcaster to version 2; register one with RegisterUpcaster",
		},
		{
			name:     "missing second upcaster",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 3, renameNick) },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 1, map[string]any{"nick": "ada"}) },
			wantIs:   events.ErrInvalid, wantText: "test.greeted version 2: invalid event: no upcaster to version 3",
		},
		{
			name:     "upcaster fails",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, failing) },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 1, map[string]any{"nick": "ada"}) },
			wantIs:   events.ErrInvalid, wantText: "upcast test.greeted from version 1: invalid event: cannot lift",
		},
		{
			name:     "old payload the upcaster cannot read",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, renameNick) },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 1, map[string]any{"nick": 7}) },
			wantIs:   events.ErrInvalid, wantText: "nick is int8, want a string",
		},
		{
			name:     "old payload is not a map",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, renameNick) },
			data: func(t *testing.T) []byte {
				return message(t, wire(t, map[string]any{"type": string(typeGreeted), "v": 1, "payload": []string{"x"}}))
			},
			wantIs: events.ErrInvalid, wantText: "field payload",
		},
		{
			name:     "upcast payload fails validation",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, renameNick) },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 1, map[string]any{"nick": ""}) },
			wantIs:   events.ErrInvalid, wantText: "field payload.name is empty",
		},
		{
			name:     "newer than the registry",
			registry: func(t *testing.T) *events.Registry { return greetedRegistry(t, 2, renameNick) },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 3, map[string]any{"name": "x"}) },
			wantIs:   events.ErrNewerVersion, wantText: "knows up to 2",
		},
		{
			name:     "type the default catalog does not know",
			registry: func(*testing.T) *events.Registry { return events.NewRegistry() },
			data:     func(t *testing.T) []byte { return greetedMessage(t, 1, map[string]any{"nick": "x"}) },
			wantIs:   events.ErrUnknownEvent, wantText: `"test.greeted"`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.registry(t)
			var got []events.Event
			var err error
			require.NotPanics(t, func() { got, err = r.Decode(tc.data(t)) })
			require.Error(t, err)
			assert.Nil(t, got)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
			assert.Contains(t, err.Error(), tc.wantText)
		})
	}
}

func TestRegisterUpcasterErrors(t *testing.T) {
	r := greetedRegistry(t, 2)
	noop := func(m map[string]any) (map[string]any, error) { return m, nil }
	tests := []struct {
		name   string
		typ    events.Type
		from   int
		wantIs error
	}{
		{name: "unknown type", typ: "nope.happened", from: 1, wantIs: events.ErrUnknownEvent},
		{name: "from 0", typ: typeGreeted, from: 0},
		{name: "from the current version", typ: typeGreeted, from: 2},
		{name: "from a future version", typ: typeGreeted, from: 5},
		{name: "catalog type at version 1", typ: events.TypeUserAppended, from: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := r.RegisterUpcaster(tc.typ, tc.from, noop)
			require.Error(t, err)
			if tc.wantIs != nil {
				assert.ErrorIs(t, err, tc.wantIs)
			}
			assert.Contains(t, err.Error(), "register upcaster")
		})
	}
}

func TestRegistriesAreIndependent(t *testing.T) {
	// A registry built for a test must not change the default catalog.
	r := greetedRegistry(t, 2, renameNick)
	assert.Contains(t, r.Types(), typeGreeted)
	assert.NotContains(t, events.NewRegistry().Types(), typeGreeted)
	assert.Zero(t, events.CurrentVersion(typeGreeted))

	e := events.Event{
		ID: ulid.Make(), Conversation: testConv, Type: typeGreeted, Version: 2, Time: time.Now().UTC(),
		Cause: "r", Actor: "a", Payload: greetedV2{Name: "x"},
	}
	data, err := r.Encode(e)
	require.NoError(t, err)
	_, err = events.Decode(data)
	assert.ErrorIs(t, err, events.ErrUnknownEvent)
	got, err := r.Decode(data)
	require.NoError(t, err)
	assert.Equal(t, []events.Event{e}, got)
}

// panicky is a payload whose decoder panics, standing in for a bug in the
// msgpack library that Decode must survive.
type panicky struct{}

func (panicky) EventType() events.Type { return "test.panicked" }
func (panicky) Validate() error        { return nil }

func (*panicky) DecodeMsgpack(*msgpack.Decoder) error { panic("decoder bug") }

func TestDecodeSurvivesADecoderPanic(t *testing.T) {
	r := events.NewRegistry()
	events.Register[panicky](r, 1)
	data := message(t, wire(t, map[string]any{"type": "test.panicked", "payload": map[string]any{}}))
	var err error
	require.NotPanics(t, func() { _, err = r.Decode(data) })
	assert.ErrorIs(t, err, events.ErrInvalid)
	assert.ErrorContains(t, err, "the msgpack decoder panicked: decoder bug")

	// The registry, and the decoder pool behind it, still work.
	good, err := events.Encode(newEvent(samplePayloads()[1]))
	require.NoError(t, err)
	for i := 0; i < 10; i++ {
		got, err := r.Decode(good)
		require.NoError(t, err)
		require.Len(t, got, 1)
	}
}
