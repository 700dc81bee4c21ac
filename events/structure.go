package events

// This file holds the walk that checks a message's msgpack structure
// before the reflection decoder reads it.

import "fmt"

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
