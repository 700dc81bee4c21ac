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

// wireIn is the msgpack form of an envelope: short keys, the payload as
// a nested map, kept raw until the registry has chosen its type and
// version. Encode writes the same map by hand (appendEnvelope), in the
// key order of wireIn's fields.
//
// ID and Time are pointers because msgpack v5.4.1 panics when it decodes a
// msgpack nil into a non-pointer value of a type with its own decoder
// (reflect.Value.IsNil on an array or struct); FuzzDecode found it with
// "time": nil. A pointer takes the nil, and Decode reports the field as
// missing.
type wireIn struct {
	ID           *ulid.ULID         `msgpack:"id"`
	Conversation string             `msgpack:"conv"`
	Type         Type               `msgpack:"type"`
	Version      int                `msgpack:"v"`
	Time         *time.Time         `msgpack:"time"`
	Cause        string             `msgpack:"cause"`
	Step         int                `msgpack:"step"`
	Actor        string             `msgpack:"actor"`
	Payload      msgpack.RawMessage `msgpack:"payload"`
}

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// Encode validates events and encodes them, in order, as one msgpack array:
// the body of one log message, which lands all or none.
func Encode(evs ...Event) ([]byte, error) { return catalog.Encode(evs...) }

// AppendEncode is Encode appending to dst, for a caller that keeps a
// buffer for its messages: it returns dst with the message appended, and
// allocates only when dst has no room left. On error dst's contents are
// unspecified.
func AppendEncode(dst []byte, evs ...Event) ([]byte, error) { return catalog.AppendEncode(dst, evs...) }

// Decode decodes a message written by Encode, upcasting old versions, and
// validates every event. A byte string that is not such a message gives an
// error wrapping ErrInvalid, ErrUnknownEvent or ErrNewerVersion; it never
// panics.
func Decode(data []byte) ([]Event, error) { return catalog.Decode(data) }

// DecodeOwned is Decode for a caller that hands data over for good: the
// events' strings are views of data rather than copies of it, which saves
// copying every message a load reads. data must never be changed
// afterward, or events already applied to a Turn would change with it.
// eventlog passes it the message bodies it read from the server, which
// nothing else holds.
func DecodeOwned(data []byte) ([]Event, error) { return catalog.DecodeOwned(data) }

// Encode is Encode with this registry's catalog.
func (r *Registry) Encode(evs ...Event) ([]byte, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	if err := r.encode(buf, evs); err != nil {
		return nil, err
	}
	return bytes.Clone(buf.Bytes()), nil
}

// AppendEncode is AppendEncode with this registry's catalog.
func (r *Registry) AppendEncode(dst []byte, evs ...Event) ([]byte, error) {
	buf := bufPool.Get().(*bytes.Buffer)
	*buf = *bytes.NewBuffer(dst)
	defer func() {
		*buf = bytes.Buffer{} // the pool must not keep the caller's bytes
		bufPool.Put(buf)
	}()
	if err := r.encode(buf, evs); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

// encode appends the message of evs to buf.
func (r *Registry) encode(buf *bytes.Buffer, evs []Event) error {
	if len(evs) == 0 {
		return fmt.Errorf("encode: %w: no events", ErrInvalid)
	}
	var enc *msgpack.Encoder // for payloads appendPayload does not know
	defer func() {
		if enc != nil {
			msgpack.PutEncoder(enc)
		}
	}()
	buf.Write(appendArrayLen(buf.AvailableBuffer(), len(evs)))
	for i := range evs {
		e := &evs[i]
		if err := e.Validate(); err != nil {
			return fmt.Errorf("encode event %d (%s): %w", i, e.Type, err)
		}
		if cur := r.current(e.Type); cur == 0 {
			return fmt.Errorf("encode event %d: %w %q", i, ErrUnknownEvent, e.Type)
		} else if e.Version != cur {
			return fmt.Errorf("encode event %d (%s): version %d, but writers must use the current version %d", i, e.Type, e.Version, cur)
		}
		// By hand, byte for byte as msgpack's reflection encoded the
		// wireOut struct Encode once used (see appendEnvelope); a payload
		// type of another registry still goes through reflection, as the
		// Payload field did.
		b, ok := appendPayload(appendEnvelope(buf.AvailableBuffer(), e), e.Payload)
		buf.Write(b)
		if !ok {
			if enc == nil {
				enc = msgpack.GetEncoder()
				enc.Reset(buf)
				enc.SetSortMapKeys(true) // equal events, equal bytes
			}
			if err := enc.Encode(e.Payload); err != nil {
				return fmt.Errorf("encode event %d (%s): %w", i, e.Type, err)
			}
		}
	}
	return nil
}

// Decode is Decode with this registry's catalog. The messages turnlog
// writes take the hand-written path (decode_fast.go); anything else, and
// every error, is msgpack reflection's to decode.
func (r *Registry) Decode(data []byte) ([]Event, error) {
	if evs, ok := r.decodeFast(data, false); ok {
		return evs, nil
	}
	return r.decodeReflect(data)
}

// DecodeOwned is DecodeOwned with this registry's catalog.
func (r *Registry) DecodeOwned(data []byte) ([]Event, error) {
	if evs, ok := r.decodeFast(data, true); ok {
		return evs, nil
	}
	return r.decodeReflect(data)
}

// decodeReflect decodes data with msgpack's reflection: the definition of
// what a message means, which decodeFast is held to.
func (r *Registry) decodeReflect(data []byte) ([]Event, error) {
	if err := checkStructure(data); err != nil {
		return nil, err
	}
	dec := msgpack.GetDecoder()
	evs, panicked, err := r.decodeWith(dec, data)
	if !panicked {
		// A decoder that panicked may hold state Reset does not clear.
		msgpack.PutDecoder(dec)
	}
	return evs, err
}

// decodeWith decodes data with dec. The msgpack decoder has panicked on
// malformed input before (see wireIn); should it find another way to,
// the panic becomes an ErrInvalid error here rather than a crash of
// whoever reads the log. FuzzDecode fails on such errors, so each new case
// still gets found and fixed properly.
func (r *Registry) decodeWith(dec *msgpack.Decoder, data []byte) (evs []Event, panicked bool, err error) {
	defer func() {
		if p := recover(); p != nil {
			evs, panicked, err = nil, true, fmt.Errorf("decode: %w: the msgpack decoder panicked: %v", ErrInvalid, p)
		}
	}()
	rd := bytes.NewReader(data)
	dec.Reset(rd)
	n, err := dec.DecodeArrayLen()
	if err != nil {
		return nil, false, fmt.Errorf("decode: %w: not a msgpack array of events: %v", ErrInvalid, err)
	}
	// Every event takes well over one byte, so a length beyond the input's
	// size is a lie that must not turn into a huge allocation.
	if n <= 0 || n > len(data) {
		return nil, false, fmt.Errorf("decode: %w: array of %d events in %d bytes", ErrInvalid, n, len(data))
	}
	// Even a length within the input's size may lie: an Event is ~150
	// bytes in memory, so trusting it would turn a 1 MB message of junk
	// into a 150 MB allocation. Messages hold a step's few events; let
	// append grow the rare long one.
	out := make([]Event, 0, min(n, 8))
	for i := 0; i < n; i++ {
		var w wireIn
		if err := dec.Decode(&w); err != nil {
			return nil, false, fmt.Errorf("decode event %d: %w: %v", i, ErrInvalid, err)
		}
		if w.ID == nil {
			return nil, false, fmt.Errorf("decode event %d: %w", i, fieldErr("id", "is missing"))
		}
		if w.Time == nil {
			return nil, false, fmt.Errorf("decode event %d: %w", i, fieldErr("time", "is missing"))
		}
		p, v, err := r.payload(w.Type, w.Version, w.Payload)
		if err != nil {
			return nil, false, fmt.Errorf("decode event %d: %w", i, err)
		}
		e := Event{*w.ID, w.Conversation, w.Type, v, w.Time.UTC(), w.Cause, w.Step, w.Actor, p}
		if err := e.Validate(); err != nil {
			return nil, false, fmt.Errorf("decode event %d (%s): %w", i, w.Type, err)
		}
		out = append(out, e)
	}
	if _, err := rd.ReadByte(); !errors.Is(err, io.EOF) {
		return nil, false, fmt.Errorf("decode: %w: trailing bytes after %d events", ErrInvalid, n)
	}
	return out, false, nil
}
