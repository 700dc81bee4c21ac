package events

import (
	"encoding/binary"
	"time"
	"unsafe"
)

// reader reads the msgpack forms a message of the catalog is made of, for
// the hand-written decoder (see decode_fast.go). Every method reports
// false, and reads nothing it can be trusted with, when the next value is
// not in a form it knows; the caller then leaves the whole message to the
// reflection decoder, which decides what it means (an error, or a form
// msgpack also accepts, such as a string sent as bin). So a reader never
// has to be right about unusual input, only about the input it accepts.
//
// Strings are slices of s, the message as one string: one allocation per
// message instead of one per string (or none, for DecodeOwned). A string
// read keeps its whole message alive; the Turns built from a message hold
// most of its bytes (block texts) anyway.
type reader struct {
	b   []byte
	s   string // b as a string
	off int
}

// newReader reads a copy of data.
func newReader(data []byte) reader { return reader{b: data, s: string(data)} }

// newOwningReader reads data itself: the strings it returns are views of
// data's memory, so data must never change afterward (see DecodeOwned).
func newOwningReader(data []byte) reader {
	return reader{b: data, s: unsafe.String(unsafe.SliceData(data), len(data))}
}

// left is how many bytes are still to read.
func (r *reader) left() int { return len(r.b) - r.off }

// code reads the byte that starts a value.
func (r *reader) code() (byte, bool) {
	if r.off >= len(r.b) {
		return 0, false
	}
	c := r.b[r.off]
	r.off++
	return c, true
}

// uintN reads an n-byte big-endian unsigned number (n is 1, 2, 4 or 8).
func (r *reader) uintN(n int) (uint64, bool) {
	if r.left() < n {
		return 0, false
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	switch n {
	case 1:
		return uint64(b[0]), true
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), true
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), true
	}
	return binary.BigEndian.Uint64(b), true
}

// nilValue consumes a msgpack nil and reports whether there was one.
func (r *reader) nilValue() bool {
	if r.off < len(r.b) && r.b[r.off] == 0xc0 {
		r.off++
		return true
	}
	return false
}

// container reads the header of a map (fix, 16, 32) or an array, as
// chosen by the three codes, and its number of items. A count larger than
// the bytes left is a lie (every item takes a byte) and is refused before
// anything is allocated for it.
func (r *reader) container(fix, c16, c32 byte) (int, bool) {
	c, ok := r.code()
	if !ok {
		return 0, false
	}
	var n uint64
	switch {
	case c&0xf0 == fix:
		n = uint64(c & 0x0f)
	case c == c16:
		n, ok = r.uintN(2)
	case c == c32:
		n, ok = r.uintN(4)
	default:
		return 0, false
	}
	if !ok || n > uint64(r.left()) {
		return 0, false
	}
	return int(n), true
}

func (r *reader) mapLen() (int, bool)   { return r.container(0x80, 0xde, 0xdf) }
func (r *reader) arrayLen() (int, bool) { return r.container(0x90, 0xdc, 0xdd) }

// strSpan reads a str header (fixstr, str 8, 16, 32) and returns where its
// bytes are. Bin and nil, which msgpack also decodes into strings, are
// left to reflection.
func (r *reader) strSpan() (start, end int, ok bool) {
	c, ok := r.code()
	if !ok {
		return 0, 0, false
	}
	var n uint64
	switch {
	case c&0xe0 == 0xa0:
		n = uint64(c & 0x1f)
	case c == 0xd9:
		n, ok = r.uintN(1)
	case c == 0xda:
		n, ok = r.uintN(2)
	case c == 0xdb:
		n, ok = r.uintN(4)
	default:
		return 0, 0, false
	}
	if !ok || n > uint64(r.left()) {
		return 0, 0, false
	}
	start = r.off
	r.off += int(n)
	return start, r.off, true
}

// str reads a string.
func (r *reader) str() (string, bool) {
	start, end, ok := r.strSpan()
	if !ok {
		return "", false
	}
	return r.s[start:end], true
}

// int reads any msgpack integer as msgpack's DecodeInt64 does: unsigned
// 64-bit values above MaxInt64 wrap, as they do there.
func (r *reader) int() (int64, bool) {
	c, ok := r.code()
	if !ok {
		return 0, false
	}
	if c <= 0x7f || c >= 0xe0 { // positive and negative fixint
		return int64(int8(c)), true
	}
	var u uint64
	switch c {
	case 0xcc, 0xd0:
		u, ok = r.uintN(1)
	case 0xcd, 0xd1:
		u, ok = r.uintN(2)
	case 0xce, 0xd2:
		u, ok = r.uintN(4)
	case 0xcf, 0xd3:
		u, ok = r.uintN(8)
	default:
		return 0, false // floats and nil are left to reflection
	}
	if !ok {
		return 0, false
	}
	switch c {
	case 0xd0:
		return int64(int8(u)), true
	case 0xd1:
		return int64(int16(u)), true
	case 0xd2:
		return int64(int32(u)), true
	}
	return int64(u), true
}

// bool reads true or false.
func (r *reader) bool() (bool, bool) {
	c, ok := r.code()
	switch {
	case !ok:
		return false, false
	case c == 0xc3:
		return true, true
	case c == 0xc2:
		return false, true
	}
	return false, false
}

// time reads the timestamp extension (type -1) in its 32-, 64- and 96-bit
// forms, as msgpack's decodeTime, in UTC as Decode gives every time.
func (r *reader) time() (time.Time, bool) {
	if r.left() < 2 {
		return time.Time{}, false
	}
	c, typ := r.b[r.off], r.b[r.off+1]
	var n int
	switch {
	case c == 0xd6 && typ == 0xff: // fixext 4
		n, r.off = 4, r.off+2
	case c == 0xd7 && typ == 0xff: // fixext 8
		n, r.off = 8, r.off+2
	case c == 0xc7 && typ == 12 && r.left() >= 3 && r.b[r.off+2] == 0xff: // ext 8 of 12 bytes
		n, r.off = 12, r.off+3
	default:
		return time.Time{}, false
	}
	if r.left() < n {
		return time.Time{}, false
	}
	b := r.b[r.off : r.off+n]
	r.off += n
	switch n {
	case 4:
		return time.Unix(int64(binary.BigEndian.Uint32(b)), 0).UTC(), true
	case 8:
		v := binary.BigEndian.Uint64(b)
		return time.Unix(int64(v&0x00000003ffffffff), int64(v>>34)).UTC(), true
	}
	return time.Unix(int64(binary.BigEndian.Uint64(b[4:])), int64(binary.BigEndian.Uint32(b))).UTC(), true
}

// The readers below fill a field in place, for the cases of
// payload_decode.go.

// readString reads a string into a string type (string, Type, Kind,
// Trust).
func readString[S ~string](r *reader, s *S) bool {
	v, ok := r.str()
	*s = S(v)
	return ok
}

// readInt reads an integer into an integer type (int, time.Duration), as
// msgpack's reflection does: converted from int64.
func readInt[I ~int | ~int64](r *reader, n *I) bool {
	v, ok := r.int()
	*n = I(v)
	return ok
}

func readBool(r *reader, b *bool) (ok bool) {
	*b, ok = r.bool()
	return ok
}

// readStringMap reads nil or a map of strings to strings. An empty map
// gives an empty map, not nil, as msgpack's decoder does (canonical then
// decides); a key given twice keeps its last value, as there. A field
// that already holds a map (its key came twice) is left to reflection,
// which merges the two.
func readStringMap(r *reader, m *map[string]string) bool {
	if *m != nil {
		return false
	}
	if r.nilValue() {
		*m = nil
		return true
	}
	n, ok := r.mapLen()
	if !ok {
		return false
	}
	out := make(map[string]string, n)
	for range n {
		k, ok := r.str()
		if !ok {
			return false
		}
		v, ok := r.str()
		if !ok {
			return false
		}
		out[k] = v
	}
	*m = out
	return true
}

// readStrings reads nil or an array of strings; an empty array gives an
// empty slice, not nil, as msgpack's decoder does. A field that already
// holds a slice (its key came twice) is left to reflection.
func readStrings(r *reader, ss *[]string) bool {
	if *ss != nil {
		return false
	}
	if r.nilValue() {
		return true
	}
	n, ok := r.arrayLen()
	if !ok {
		return false
	}
	out := make([]string, n)
	for i := range out {
		if out[i], ok = r.str(); !ok {
			return false
		}
	}
	*ss = out
	return true
}

// readBlocks is readStrings for blocks.
func readBlocks(r *reader, bs *[]Block) bool {
	if *bs != nil {
		return false
	}
	if r.nilValue() {
		return true
	}
	n, ok := r.arrayLen()
	if !ok {
		return false
	}
	out := make([]Block, n)
	for i := range out {
		if !readBlock(r, &out[i]) {
			return false
		}
	}
	*bs = out
	return true
}

// readSpans is readStrings for spans.
func readSpans(r *reader, ss *[]Span) bool {
	if *ss != nil {
		return false
	}
	if r.nilValue() {
		return true
	}
	n, ok := r.arrayLen()
	if !ok {
		return false
	}
	out := make([]Span, n)
	for i := range out {
		if !readSpan(r, &out[i]) {
			return false
		}
	}
	*ss = out
	return true
}

// readBlockPointer reads nil or a Block into a new one. A field that
// already points to one is left to reflection, which would decode into it.
func readBlockPointer(r *reader, b **Block) bool {
	if *b != nil {
		return false
	}
	if r.nilValue() {
		return true
	}
	v := new(Block)
	if !readBlock(r, v) {
		return false
	}
	*b = v
	return true
}
