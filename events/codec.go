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

// maxNesting bounds how deeply maps and arrays may nest in a message. The
// catalog needs 6 levels (message, envelope, payload, blocks, block, meta).
const maxNesting = 32

// checkStructure walks the msgpack value at the start of data, without
// recursion, and rejects it unless it is complete and its maps and arrays
// nest at most maxNesting deep. The msgpack decoder trusts the lengths it
// reads and recurses once per level, so without this walk
//   - a 5-byte header claiming a 4 GiB byte string in the "id" field makes
//     it allocate 4 GiB (found by FuzzDecode), and
//   - a few megabytes of nested one-element arrays grow its stack past Go's
//     1 GB limit, a fatal error that recover cannot catch.
//
// Once every length is known to fit in data, no allocation the decoder
// makes can exceed a small multiple of len(data). The walk reads headers
// only; everything else is left to the decoder.
func checkStructure(data []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("decode: %w: %s", ErrInvalid, fmt.Sprintf(format, args...))
	}
	var open []uint64 // for each open container, the items it still holds
	left := uint64(1)
	for i := 0; ; {
		for left == 0 {
			if len(open) == 0 {
				return nil
			}
			left, open = open[len(open)-1], open[:len(open)-1]
		}
		if i >= len(data) {
			return bad("truncated: the message ends inside a value")
		}
		c := data[i]
		i++
		left--
		var items, skip uint64 // items of a container; bytes of a scalar's body
		lenField := 0          // size of a big-endian length that follows c
		switch {
		case c <= 0x7f || c >= 0xe0: // fixint
		case c <= 0x8f: // fixmap
			items = 2 * uint64(c&0x0f)
		case c <= 0x9f: // fixarray
			items = uint64(c & 0x0f)
		case c <= 0xbf: // fixstr
			skip = uint64(c & 0x1f)
		default:
			switch c {
			case 0xc1:
				return bad("byte 0x%02x at offset %d is not msgpack", c, i-1)
			case 0xc4, 0xd9, 0xc7, 0xcc, 0xd0: // bin8, str8, ext8, uint8, int8
				lenField = 1
			case 0xc5, 0xda, 0xc8, 0xcd, 0xd1, 0xdc, 0xde: // 16-bit lengths, uint16, int16
				lenField = 2
			case 0xc6, 0xdb, 0xc9, 0xce, 0xd2, 0xca, 0xdd, 0xdf: // 32-bit lengths, uint32, int32, float32
				lenField = 4
			case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
				skip = 8
			case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1, 2, 4, 8, 16 (plus the type byte)
				skip = 1 + 1<<(c-0xd4)
			}
		}
		if lenField > 0 {
			if len(data)-i < lenField {
				return bad("truncated: the message ends inside a header")
			}
			var n uint64
			for _, b := range data[i : i+lenField] {
				n = n<<8 | uint64(b)
			}
			i += lenField
			switch c {
			case 0xc4, 0xc5, 0xc6, 0xd9, 0xda, 0xdb: // bin, str
				skip = n
			case 0xc7, 0xc8, 0xc9: // ext: the type byte, then the body
				skip = n + 1
			case 0xdc, 0xdd: // array
				items = n
			case 0xde, 0xdf: // map
				items = 2 * n
			}
			// Numbers were read whole as their "length".
		}
		// Every item takes at least one byte, so a container claiming more
		// items than bytes remain is a lie, like a string that long.
		if rest := uint64(len(data) - i); skip > rest || items > rest {
			return bad("a length at offset %d claims more than the %d bytes left", i-1-lenField, rest)
		}
		i += int(skip)
		if items > 0 {
			if len(open) == maxNesting {
				return bad("maps and arrays nest deeper than %d levels", maxNesting)
			}
			open = append(open, left)
			left = items
		}
	}
}

// canonical returns p with its optional maps and slices set to nil when
// they are empty. The wire form omits empty ones (omitempty), so an empty
// map and a missing one are the same message; decoding both to nil makes
// Decode a fixed point of the codec: Decode(Encode(Decode(m))) equals
// Decode(m), which replay and fuzzing rely on. A payload without empty
// ones, the usual case, is returned as it is, without a copy.
func canonical(p Payload) Payload {
	switch v := p.(type) {
	case ConversationStarted:
		if hollow(v.Data) || v.Blocks != nil && len(v.Blocks) == 0 || hollowBlocks(v.Blocks) {
			v.Blocks = canonicalBlocks(v.Blocks)
			v.Data = nilIfEmpty(v.Data)
			return v
		}
	case UserAppended:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case SystemPromptSet:
		if hollow(v.Meta) || hollow(v.Variables) || hollowSpans(v.Untrusted) {
			v.Meta = nilIfEmpty(v.Meta)
			v.Variables = nilIfEmpty(v.Variables)
			v.Untrusted = nilIfNoSpans(v.Untrusted)
			return v
		}
	case SystemPromptReplaced:
		if hollow(v.Meta) || hollow(v.Variables) || hollowSpans(v.Untrusted) {
			v.Meta = nilIfEmpty(v.Meta)
			v.Variables = nilIfEmpty(v.Variables)
			v.Untrusted = nilIfNoSpans(v.Untrusted)
			return v
		}
	case ReasoningAppended:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case LLMTextAppended:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case ToolCalled:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case ToolResult:
		if hollow(v.Meta) {
			v.Meta = nil
			return v
		}
	case BlockSplit:
		canonicalBlocks(v.Into) // validation rejects an empty Into anyway
	case TurnCompacted:
		if v.Summary != nil {
			v.Summary.Meta = nilIfEmpty(v.Summary.Meta) // a fresh pointer: changing it changes p
			v.Summary.Untrusted = nilIfNoSpans(v.Summary.Untrusted)
		}
	case InferenceStarted:
		if v.InputBlocks != nil && len(v.InputBlocks) == 0 || hollowSpans(v.Untrusted) {
			if len(v.InputBlocks) == 0 {
				v.InputBlocks = nil
			}
			v.Untrusted = nilIfNoSpans(v.Untrusted)
			return v
		}
	case MessageRemoved:
		if hollow(v.Headers) {
			v.Headers = nil
			return v
		}
	case DataSet:
		if hollow(v.Values) || v.Unset != nil && len(v.Unset) == 0 {
			v.Values = nilIfEmpty(v.Values)
			if len(v.Unset) == 0 {
				v.Unset = nil
			}
			return v
		}
	}
	return p
}

// hollow reports whether m is empty but not nil.
func hollow(m map[string]string) bool { return m != nil && len(m) == 0 }

func hollowBlocks(bs []Block) bool {
	for _, b := range bs {
		if hollow(b.Meta) || hollowSpans(b.Untrusted) {
			return true
		}
	}
	return false
}

// hollowSpans reports whether s is empty but not nil.
func hollowSpans(s []Span) bool { return s != nil && len(s) == 0 }

func nilIfNoSpans(s []Span) []Span {
	if len(s) == 0 {
		return nil
	}
	return s
}

// canonicalBlocks applies canonical's rule to blocks the decoder just
// made, in place.
func canonicalBlocks(bs []Block) []Block {
	if len(bs) == 0 {
		return nil
	}
	for i := range bs {
		bs[i].Meta = nilIfEmpty(bs[i].Meta)
		bs[i].Untrusted = nilIfNoSpans(bs[i].Untrusted)
	}
	return bs
}

func nilIfEmpty(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return m
}
