package events

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// wireOut and wireIn are the msgpack form of an envelope: short keys, the
// payload as a nested map. wireIn keeps the payload raw until the registry
// has chosen its type and version.
type wireOut struct {
	ID           ulid.ULID `msgpack:"id"`
	Conversation string    `msgpack:"conv"`
	Type         Type      `msgpack:"type"`
	Version      int       `msgpack:"v"`
	Time         time.Time `msgpack:"time"`
	Cause        string    `msgpack:"cause"`
	Step         int       `msgpack:"step"`
	Actor        string    `msgpack:"actor"`
	Payload      Payload   `msgpack:"payload"`
}

type wireIn struct {
	ID           ulid.ULID          `msgpack:"id"`
	Conversation string             `msgpack:"conv"`
	Type         Type               `msgpack:"type"`
	Version      int                `msgpack:"v"`
	Time         time.Time          `msgpack:"time"`
	Cause        string             `msgpack:"cause"`
	Step         int                `msgpack:"step"`
	Actor        string             `msgpack:"actor"`
	Payload      msgpack.RawMessage `msgpack:"payload"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Encode validates events and encodes them, in order, as one msgpack array:
// the body of one log message, which lands all or none.
func Encode(evs ...Event) ([]byte, error) { return catalog.Encode(evs...) }

// Decode decodes a message written by Encode, upcasting old versions, and
// validates every event. A byte string that is not such a message gives an
// error wrapping ErrInvalid, ErrUnknownEvent or ErrNewerVersion; it never
// panics.
func Decode(data []byte) ([]Event, error) { return catalog.Decode(data) }

// Encode is Encode with this registry's catalog.
func (r *Registry) Encode(evs ...Event) ([]byte, error) {
	if len(evs) == 0 {
		return nil, fmt.Errorf("encode: %w: no events", ErrInvalid)
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	if err := enc.EncodeArrayLen(len(evs)); err != nil {
		return nil, err
	}
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("encode event %d (%s): %w", i, e.Type, err)
		}
		if cur := r.current(e.Type); cur == 0 {
			return nil, fmt.Errorf("encode event %d: %w %q", i, ErrUnknownEvent, e.Type)
		} else if e.Version != cur {
			return nil, fmt.Errorf("encode event %d (%s): version %d, but writers must use the current version %d", i, e.Type, e.Version, cur)
		}
		w := wireOut{e.ID, e.Conversation, e.Type, e.Version, e.Time.UTC(), e.Cause, e.Step, e.Actor, e.Payload}
		if err := enc.Encode(&w); err != nil {
			return nil, fmt.Errorf("encode event %d (%s): %w", i, e.Type, err)
		}
	}
	return bytes.Clone(buf.Bytes()), nil
}

// Decode is Decode with this registry's catalog.
func (r *Registry) Decode(data []byte) ([]Event, error) {
	dec := msgpack.GetDecoder()
	defer msgpack.PutDecoder(dec)
	rd := bytes.NewReader(data)
	dec.Reset(rd)
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, fmt.Errorf("decode: %w: not a msgpack array of events: %v", ErrInvalid, err)
	}
	// Every event takes well over one byte, so a length beyond the input's
	// size is a lie that must not turn into a huge allocation.
	if n <= 0 || n > len(data) {
		return nil, fmt.Errorf("decode: %w: array of %d events in %d bytes", ErrInvalid, n, len(data))
	}
	out := make([]Event, 0, n)
	for i := 0; i < n; i++ {
		var w wireIn
		if err := dec.Decode(&w); err != nil {
			return nil, fmt.Errorf("decode event %d: %w: %v", i, ErrInvalid, err)
		}
		p, v, err := r.payload(w.Type, w.Version, w.Payload)
		if err != nil {
			return nil, fmt.Errorf("decode event %d: %w", i, err)
		}
		e := Event{w.ID, w.Conversation, w.Type, v, w.Time.UTC(), w.Cause, w.Step, w.Actor, p}
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("decode event %d (%s): %w", i, w.Type, err)
		}
		out = append(out, e)
	}
	if _, err := rd.ReadByte(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("decode: %w: trailing bytes after %d events", ErrInvalid, n)
	}
	return out, nil
}
