package calls

// A request's canonical form: written member by member from the canonical
// JSON of each (JCS, see Canonical), hashed into its input hash, and
// compared with a render of the recorded call.

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"sync"
)

// joinObject writes the canonical object of members that are canonical
// already.
func joinObject(members map[string][]byte) []byte {
	keys := make([]string, 0, len(members))
	n := 2
	for k, v := range members {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	sortUTF16(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, k)
		b = append(b, ':')
		b = append(b, members[k]...)
	}
	return append(b, '}')
}

func joinArray(items [][]byte) []byte {
	// Sized first: a history of many items grown by append would be
	// copied a dozen times per call.
	n := 2 + len(items)
	for _, it := range items {
		n += len(it)
	}
	b := make([]byte, 1, n)
	b[0] = '['
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, ']')
}

// canonicalHash is hashCanonical(joinObject(members)) where each member
// named in lists is the array of those canonical items (joinArray),
// hashed as it is written: a long history's input is not copied into one
// array and then into one object, twice a call, only to be hashed.
func canonicalHash(members map[string][]byte, lists map[string][][]byte) string {
	h := sha256.New()
	writeCanonical(h, members, lists)
	return HashPrefix + hex.EncodeToString(h.Sum(nil))
}

// writeCanonical writes joinObject(members) to w, each member named in
// lists as the array of those canonical items (joinArray).
func writeCanonical(w io.Writer, members map[string][]byte, lists map[string][][]byte) {
	keys := make([]string, 0, len(members)+len(lists))
	for k := range members {
		keys = append(keys, k)
	}
	for k := range lists {
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
	}
	sortUTF16(keys)
	scratch := make([]byte, 0, 64)
	for i, k := range keys {
		scratch = scratch[:0]
		if i == 0 {
			scratch = append(scratch, '{')
		} else {
			scratch = append(scratch, ',')
		}
		scratch = appendString(scratch, k)
		scratch = append(scratch, ':')
		list, isList := lists[k]
		if isList {
			scratch = append(scratch, '[')
		}
		w.Write(scratch)
		if !isList {
			w.Write(members[k])
			continue
		}
		for j, it := range list {
			if j > 0 {
				w.Write(comma)
			}
			w.Write(it)
		}
		w.Write(closeArray)
	}
	if len(keys) == 0 {
		w.Write([]byte{'{'})
	}
	w.Write(closeObject)
}

// matcher is an io.Writer that compares what is written to it with want.
type matcher struct {
	want []byte
	off  int
	diff bool
}

func (m *matcher) Write(p []byte) (int, error) {
	if !m.diff {
		if m.off+len(p) > len(m.want) || !bytes.Equal(m.want[m.off:m.off+len(p)], p) {
			m.diff = true
		}
		m.off += len(p)
	}
	return len(p), nil
}

// canonicalBuffers hold a request's canonical JSON while a render is
// compared with it.
var canonicalBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// pooledBufferMax is the largest buffer put back in a pool: one huge
// request must not keep its size alive for every later one.
const pooledBufferMax = 1 << 20

// rendersTo reports whether the canonical request members and lists
// (render's) are the request's, byte for byte: its InputHash without
// hashing them again.
func (r *Request) rendersTo(members map[string][]byte, lists map[string][][]byte) bool {
	if r.canon == nil {
		return canonicalHash(members, lists) == r.InputHash
	}
	buf := canonicalBuffers.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= pooledBufferMax {
			canonicalBuffers.Put(buf)
		}
	}()
	buf.Reset()
	writeCanonical(buf, r.canon, r.lists)
	m := matcher{want: buf.Bytes()}
	writeCanonical(&m, members, lists)
	return !m.diff && m.off == len(m.want)
}

var (
	comma       = []byte{','}
	closeArray  = []byte{']'}
	closeObject = []byte{'}'}
)

func hashCanonical(c []byte) string {
	sum := sha256.Sum256(c)
	return HashPrefix + hex.EncodeToString(sum[:])
}
