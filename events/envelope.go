package events

import (
	"encoding/binary"
	"math"
)

// The envelope is written by hand rather than through msgpack's
// reflection, which cost most of Encode's time and allocations. Its bytes
// must stay exactly those msgpack v5.4.1 wrote for the wireOut struct that
// Encode used to encode (kept as encodeReflect in a test): eventlog.Append
// compares a retried step's bytes with the stored ones, so any change
// between versions would turn a harmless retry into a conflict.
// TestEncodeMatchesReflection holds the two byte for byte. What msgpack
// writes for each field of wireOut, and so what appendEnvelope writes:
//   - the struct: a map of 9 entries (no field is omitempty), keys as
//     strings in field order;
//   - id, a ulid.ULID: it implements encoding.BinaryMarshaler, which
//     msgpack prefers to TextMarshaler, so bin 8 of its 16 bytes;
//   - strings and Type: the shortest str header (fixstr, str 8/16/32);
//   - v and step, ints: EncodeInt, the shortest integer form;
//   - time: the timestamp extension (-1) in its 32-, 64- or 96-bit form.

// Each envelope key, with its fixstr header.
const (
	keyID      = "\xa2id"
	keyConv    = "\xa4conv"
	keyType    = "\xa4type"
	keyVersion = "\xa1v"
	keyTime    = "\xa4time"
	keyCause   = "\xa5cause"
	keyStep    = "\xa4step"
	keyActor   = "\xa5actor"
	keyPayload = "\xa7payload"
)

// appendEnvelope appends e's envelope up to and including the "payload"
// key; the payload's value follows.
func appendEnvelope(b []byte, e *Event) []byte {
	b = append(b, 0x80|9) // fixmap of wireOut's 9 fields
	b = append(b, keyID...)
	b = append(b, 0xc4, byte(len(e.ID))) // bin 8
	b = append(b, e.ID[:]...)
	b = append(b, keyConv...)
	b = appendString(b, e.Conversation)
	b = append(b, keyType...)
	b = appendString(b, string(e.Type))
	b = append(b, keyVersion...)
	b = appendInt(b, int64(e.Version))
	b = append(b, keyTime...)
	b = appendTime(b, e.Time.Unix(), e.Time.Nanosecond())
	b = append(b, keyCause...)
	b = appendString(b, e.Cause)
	b = append(b, keyStep...)
	b = appendInt(b, int64(e.Step))
	b = append(b, keyActor...)
	b = appendString(b, e.Actor)
	return append(b, keyPayload...)
}

// appendArrayLen writes an array header as msgpack's EncodeArrayLen.
func appendArrayLen(b []byte, n int) []byte { return appendLen(b, n, 0x90, 0xdc, 0xdd) }

// appendLen writes a container header: the fix form (fix|n) below 16
// entries, else the 16- or 32-bit form.
func appendLen(b []byte, n int, fix, c16, c32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, c16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, c32), uint32(n))
}

// appendString writes s as msgpack's EncodeString without interning.
func appendString(b []byte, s string) []byte {
	switch n := len(s); {
	case n < 32:
		b = append(b, 0xa0|byte(n))
	case n < 256:
		b = append(b, 0xd9, byte(n))
	case n <= math.MaxUint16:
		b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
	default:
		b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
	}
	return append(b, s...)
}

// appendInt writes n as msgpack's EncodeInt: the shortest form, unsigned
// for n >= 0.
func appendInt(b []byte, n int64) []byte {
	if n >= 0 {
		switch u := uint64(n); {
		case u <= math.MaxInt8:
			return append(b, byte(u)) // positive fixint
		case u <= math.MaxUint8:
			return append(b, 0xcc, byte(u))
		case u <= math.MaxUint16:
			return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(u))
		case u <= math.MaxUint32:
			return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(u))
		default:
			return binary.BigEndian.AppendUint64(append(b, 0xcf), u)
		}
	}
	switch {
	case n >= -32:
		return append(b, byte(n)) // negative fixint
	case n >= math.MinInt8:
		return append(b, 0xd0, byte(n))
	case n >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(n))
	case n >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(n))
}

// appendTime writes a time, given as Unix seconds and nanoseconds, as
// msgpack's EncodeTime: the timestamp extension (type -1) in the 32-bit
// form when it fits, else the 64-bit form, else the 96-bit one.
func appendTime(b []byte, unix int64, nsec int) []byte {
	secs := uint64(unix)
	if secs>>34 == 0 {
		data := uint64(nsec)<<34 | secs
		if data&0xffffffff00000000 == 0 {
			return binary.BigEndian.AppendUint32(append(b, 0xd6, 0xff), uint32(data)) // fixext 4
		}
		return binary.BigEndian.AppendUint64(append(b, 0xd7, 0xff), data) // fixext 8
	}
	b = append(b, 0xc7, 12, 0xff) // ext 8 of 12 bytes
	b = binary.BigEndian.AppendUint32(b, uint32(nsec))
	return binary.BigEndian.AppendUint64(b, secs)
}
