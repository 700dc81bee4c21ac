package events

import (
	"errors"
	"fmt"
	"slices"

	"github.com/vmihailenco/msgpack/v5"
)

// ErrUnknownEvent is returned for an event type the catalog does not know.
// Readers never skip such an event: silently ignoring a mutation would make
// the projection lie.
var ErrUnknownEvent = errors.New("unknown event type")

// ErrNewerVersion is returned for an event written by a newer turnlog whose
// schema this build does not understand; upgrade the reader.
var ErrNewerVersion = errors.New("event version newer than this build understands")

// Upcaster turns the payload of one schema version into the next version's
// shape. It works on the generic decoded form, so that the Go type of an
// old version need not be kept around.
type Upcaster func(old map[string]any) (map[string]any, error)

// Registry knows, for every event type, its current schema version, how to
// decode its payload and how to upcast older versions. The default catalog
// is used by Encode and Decode; NewRegistry builds others (for tests of
// schema evolution, or a program with its own event types).
type Registry struct {
	entries map[Type]*entry
	// byLen holds the entries by the length of their type, for lookup,
	// which decoding does for every event: comparing the two or three
	// types of a length costs less than hashing one for the map.
	byLen [maxIndexedTypeLen + 1][]*entry
}

// maxIndexedTypeLen bounds the types byLen holds; longer ones are looked up
// in the map.
const maxIndexedTypeLen = 48

type entry struct {
	typ     Type
	current int
	decode  func(raw []byte) (Payload, error)
	zero    Payload // for decodeHand, when hand is set
	hand    bool    // a catalog type: decodeHand decodes it

	upcasters map[int]Upcaster // from version v to v+1
}

// NewRegistry returns a registry that already holds turnlog's catalog.
func NewRegistry() *Registry {
	r := &Registry{entries: map[Type]*entry{}}
	Register[ConversationStarted](r, 1)
	Register[UserAppended](r, 1)
	Register[SystemPromptSet](r, 1)
	Register[SystemPromptReplaced](r, 1)
	Register[SystemPromptLocked](r, 1)
	Register[SystemPromptUnlocked](r, 1)
	Register[ReasoningAppended](r, 1)
	Register[LLMTextAppended](r, 1)
	Register[ToolCalled](r, 1)
	Register[ToolResult](r, 1)
	Register[BlocksReordered](r, 1)
	Register[BlocksRemoved](r, 1)
	Register[BlockAnnotated](r, 1)
	Register[BlockSplit](r, 1)
	Register[BlockInserted](r, 1)
	Register[TurnCompacted](r, 1)
	Register[DataSet](r, 1)
	Register[InferenceStarted](r, 1)
	// Version 2 adds the wire request (Wire). A version 1 event has none:
	// it is read as one without, and never mistaken for a newer one. An
	// older build refuses version 2 (ErrNewerVersion) rather than read it
	// without its wire fields, as it would by skipping unknown keys, and
	// then verify a log without checking what it records.
	Register[InferenceFinished](r, 2)
	Register[InferenceFailed](r, 2)
	Register[RequestCompleted](r, 1)
	Register[RequestFailed](r, 1)
	Register[MessageRemoved](r, 1)
	Register[FindingRecorded](r, 1)
	for _, t := range []Type{TypeInferenceFinished, TypeInferenceFailed} {
		if err := r.RegisterUpcaster(t, 1, unchanged); err != nil {
			panic("events: " + err.Error())
		}
	}
	return r
}

// unchanged upcasts a payload whose new version only added optional
// fields: the old payload is the new one with them empty.
func unchanged(old map[string]any) (map[string]any, error) { return old, nil }

// catalog is the registry Encode, Decode and New use. It is never modified
// after init.
var catalog = NewRegistry()

// Register adds (or replaces) payload type P at schema version current.
func Register[P Payload](r *Registry, current int) {
	var zero P
	_, _, hand := decodeHand(zero, &reader{})
	typ := zero.EventType()
	e := &entry{
		typ:     zero.EventType(),
		current: current,
		zero:    zero,
		hand:    hand,
		decode: func(raw []byte) (Payload, error) {
			var p P
			if err := msgpack.Unmarshal(raw, &p); err != nil {
				return nil, err
			}
			return p, nil
		},
		upcasters: map[int]Upcaster{},
	}
	r.entries[typ] = e
	if n := len(typ); n <= maxIndexedTypeLen {
		r.byLen[n] = slices.DeleteFunc(r.byLen[n], func(old *entry) bool { return old.typ == typ })
		r.byLen[n] = append(r.byLen[n], e)
	}
}

// lookup returns type t's entry, nil when t is unknown.
func (r *Registry) lookup(t Type) *entry {
	if n := len(t); n <= maxIndexedTypeLen {
		for _, e := range r.byLen[n] {
			if e.typ == t {
				return e
			}
		}
		return nil
	}
	return r.entries[t]
}

// RegisterUpcaster installs the step that lifts type t's payload from
// version from to from+1.
func (r *Registry) RegisterUpcaster(t Type, from int, up Upcaster) error {
	e, ok := r.entries[t]
	if !ok {
		return fmt.Errorf("register upcaster: %w %q", ErrUnknownEvent, t)
	}
	if from < 1 || from >= e.current {
		return fmt.Errorf("register upcaster: %s from version %d: the current version is %d", t, from, e.current)
	}
	e.upcasters[from] = up
	return nil
}

// Types lists the event types the registry knows.
func (r *Registry) Types() []Type {
	out := make([]Type, 0, len(r.entries))
	for t := range r.entries {
		out = append(out, t)
	}
	return out
}

func (r *Registry) current(t Type) int {
	if e := r.lookup(t); e != nil {
		return e.current
	}
	return 0
}

// payload decodes raw as type t at version v, upcasting it to the current
// version. It returns the payload and the version it now has.
func (r *Registry) payload(t Type, v int, raw []byte) (Payload, int, error) {
	if t == "" {
		return nil, 0, fieldErr("type", "is missing")
	}
	e, ok := r.entries[t]
	if !ok {
		return nil, 0, fmt.Errorf("%w %q", ErrUnknownEvent, t)
	}
	if v > e.current {
		return nil, 0, fmt.Errorf("%s version %d: %w (it knows up to %d)", t, v, ErrNewerVersion, e.current)
	}
	if v < 1 {
		return nil, 0, fieldErr("version", "is %d; versions start at 1", v)
	}
	if v < e.current {
		var m map[string]any
		if err := msgpack.Unmarshal(raw, &m); err != nil {
			return nil, 0, fieldErr("payload", "is not a msgpack map: %v", err)
		}
		for ; v < e.current; v++ {
			up, ok := e.upcasters[v]
			if !ok {
				// Decode promises an error wrapping ErrInvalid, ErrUnknownEvent
				// or ErrNewerVersion; an old event this build cannot lift is
				// unreadable input to it.
				return nil, 0, fmt.Errorf("%s version %d: %w: no upcaster to version %d; register one with RegisterUpcaster", t, v, ErrInvalid, v+1)
			}
			var err error
			if m, err = up(m); err != nil {
				return nil, 0, fmt.Errorf("upcast %s from version %d: %w: %w", t, v, ErrInvalid, err)
			}
		}
		var err error
		if raw, err = msgpack.Marshal(m); err != nil {
			return nil, 0, fmt.Errorf("upcast %s: %w", t, err)
		}
	}
	p, err := e.decode(raw)
	if err != nil {
		return nil, 0, fieldErr("payload", "does not decode as %s: %v", t, err)
	}
	return canonical(p), v, nil
}

// CurrentVersion is the schema version writers use for type t today, or 0
// when t is not in the catalog.
func CurrentVersion(t Type) int { return catalog.current(t) }
