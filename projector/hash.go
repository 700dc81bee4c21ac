package projector

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/turnlog/turnlog/events"
)

// ErrUnknownHashVersion: a recorded Turn hash names a format this build
// does not know (recorded by a newer turnlog, or not a Turn hash at all).
var ErrUnknownHashVersion = errors.New("unknown turn hash version")

// hashV2Prefix starts every hash Hash returns. Unprefixed hashes are v1
// (see hashV1), which turnlog recorded before the prefix existed.
const hashV2Prefix = "v2:"

// Hash is the hash of the Turn's content as a model receives it (blocks in
// order and data), independent of the conversation name and the log
// positions. inference.started records it so anyone can later prove, by
// re-projecting the log, which exact input a model call had; HashMatches
// checks a recorded hash against a Turn, whatever format it was recorded in.
//
// The result names its format, "v2:" followed by the hex SHA-256 of
//
//	str("turnlog.turn.v2") num(len(Blocks)) digest(Blocks[0]) ... digest(Blocks[n-1]) map(Data)
//
// where num is a uvarint, str a num length and the bytes, map a num count
// and then str key, str value by sorted key, and digest(b) the 32-byte
// SHA-256 of b's layout in v1 (ID, Kind, Text, Trust, map(Meta), CallID,
// ToolName, Arguments, num(IsError), Encrypted; not Untrusted, which
// says who wrote the text but is not sent to a model). The layout is written
// without reflection, and a nil and an empty map or block list hash alike
// (a snapshot or a removal may turn one into the other).
//
// Hash runs before every model call, so it must not cost O(history): the
// Turn caches each block's digest, and Apply drops the entries of the
// blocks it adds or changes. A call digests only the blocks changed since
// the last one, then hashes 32 bytes per block and the data. A Turn never
// hashed before (decoded from a snapshot, built by hand) digests all its
// blocks once. Filling the cache writes to t: see Turn on goroutines.
func Hash(t *Turn) string {
	h := hashers.Get().(*hasher)
	defer hashers.Put(h)
	if n := len(t.Blocks); len(t.sums) < n {
		old := len(t.sums)
		t.sums = slices.Grow(t.sums, n-old)[:n]
		clear(t.sums[old:]) // the capacity may hold entries a removal dropped
	}
	h.turn.reset()
	h.turn.str("turnlog.turn.v2")
	h.turn.num(uint64(len(t.Blocks)))
	for i := range t.Blocks {
		b, s := &t.Blocks[i], &t.sums[i]
		if shape := shapeOf(b); !s.ok || s.id != b.ID || s.shape != shape {
			*s = blockSum{id: b.ID, shape: shape, ok: true}
			h.block.reset()
			h.block.block(b, &h.keys)
			h.block.sum(s.sum[:0])
		}
		h.turn.raw(s.sum[:])
	}
	h.turn.strMap(t.Data, &h.keys)
	return hashV2Prefix + h.turn.hex()
}

// hashV1 is the format Hash had before v2: the hex SHA-256 (no prefix) of
// str("turnlog.turn.v1") num(len(Blocks)), each block's layout (see Hash)
// in order, and map(Data). It costs O(Turn) every time; it remains so that
// hashes recorded in it keep verifying.
func hashV1(t *Turn) string {
	h := hashers.Get().(*hasher)
	defer hashers.Put(h)
	h.turn.reset()
	h.turn.str("turnlog.turn.v1")
	h.turn.num(uint64(len(t.Blocks)))
	for i := range t.Blocks {
		h.turn.block(&t.Blocks[i], &h.keys)
	}
	h.turn.strMap(t.Data, &h.keys)
	return h.turn.hex()
}

// HashAs returns t's hash in the format recorded names, so that hashes
// recorded by any version of turnlog can be checked against a Turn: "v2:"
// hashes as Hash computes them, unprefixed ones as v1. A prefix it does not
// know is ErrUnknownHashVersion, with what to do in the message.
func HashAs(t *Turn, recorded string) (string, error) {
	version, _, prefixed := strings.Cut(recorded, ":")
	switch {
	case !prefixed:
		return hashV1(t), nil
	case version+":" == hashV2Prefix:
		return Hash(t), nil
	}
	if len(version) > 16 {
		version = version[:16] + "…"
	}
	return "", fmt.Errorf("%w %q: this turnlog knows v2 and unprefixed (v1) hashes; check it with the turnlog that recorded it, or a newer one",
		ErrUnknownHashVersion, version)
}

// HashMatches reports whether recorded, a hash inference.started recorded,
// is t's hash in the format recorded names (see HashAs). A hash in a format
// this build does not know never matches.
func HashMatches(t *Turn, recorded string) bool {
	h, err := HashAs(t, recorded)
	return err == nil && h == recorded
}

// HashText is the hex SHA-256 of a text, used for system prompts and
// templates so that equal prompts have equal hashes across conversations.
func HashText(s string) string {
	if len(s) <= 256 {
		sum := sha256.Sum256([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	// A long prompt is hashed through a small buffer, not copied whole
	// into a byte slice first (the gateway hashes one on every call).
	h := sha256.New()
	var buf [512]byte
	for len(s) > 0 {
		n := copy(buf[:], s)
		h.Write(buf[:n])
		s = s[n:]
	}
	var sum [sha256.Size]byte
	return hex.EncodeToString(h.Sum(sum[:0]))
}

// blockSum is a cached block digest. It counts only while ok and while id
// is the ID of the block at its position, and Hash replaces an entry whose
// ID is not: blocks cut, appended, moved or replaced by hand since the last
// Hash (a Turn built for a test or from an export) are digested again. The
// ID and the block's shape are a safety net, not a licence: changes go
// through Apply, whose invalidation is what the cache relies on.
type blockSum struct {
	id    string
	shape blockShape
	sum   [sha256.Size]byte
	ok    bool
	// noted: shape is the block's as Note saw it, sum not computed yet.
	noted bool
}

// blockShape is what of a block can be compared without hashing it: its
// fields that are values, where its strings' bytes are and how long they
// are, and how many metadata entries it has. A block changed in place
// (a middleware's redaction written to the Block, an engine writing to
// its input) has another shape, and Hash digests it again: the hash of a
// model call's input is that of what the model was sent, and replay
// --verify reports that the log does not hold it. Strings are immutable,
// so bytes at the same place with the same length are the same text; a
// metadata value replaced in place under the same number of keys is the
// one change it cannot see.
type blockShape struct {
	kind                                events.Kind
	trust                               events.Trust
	isError                             bool
	meta                                int
	text, callID, tool, args, encrypted textAt
}

// textAt is where a string's bytes are, and how many.
type textAt struct {
	p *byte
	n int
}

func at(s string) textAt { return textAt{unsafe.StringData(s), len(s)} }

func shapeOf(b *Block) blockShape {
	return blockShape{kind: b.Kind, trust: b.Trust, isError: b.IsError, meta: len(b.Meta),
		text: at(b.Text), callID: at(b.CallID), tool: at(b.ToolName), args: at(b.Arguments), encrypted: at(b.Encrypted)}
}

// ChangedInPlace returns the index of the first block changed in place
// since Hash last digested it (its kind, trust, text, call, arguments,
// opaque part or number of metadata entries written to the Block itself,
// not through Apply; or another block put in its place, of another ID,
// as a swap of two blocks does: Apply keeps each digest beside its block
// through inserts, removals and reorders), and whether there is one. A
// writer that keeps its changes in events (engine.Tx) asks before a model
// call: such a change is in no event, so the log would not hold what the
// model is sent.
func ChangedInPlace(t *Turn) (int, bool) {
	for i := range min(len(t.sums), len(t.Blocks)) {
		b, s := &t.Blocks[i], &t.sums[i]
		if (s.ok || s.noted) && (s.id != b.ID || s.shape != shapeOf(b)) {
			return i, true
		}
	}
	return -1, false
}

// ChangedInPlaceID is ChangedInPlace for the one block with ID id: its
// index, and whether it was changed in place (or another block put where
// it was) since Hash or Note last saw it. For a writer that checks, at
// each event, the block the event is about to change.
func ChangedInPlaceID(t *Turn, id string) (int, bool) {
	i := t.Index(id)
	if i < 0 || i >= len(t.sums) || i >= len(t.Blocks) {
		return i, false
	}
	b, s := &t.Blocks[i], &t.sums[i]
	return i, (s.ok || s.noted) && (s.id != b.ID || s.shape != shapeOf(b))
}

// Note remembers the shape of every block Hash has not digested (nor Note
// seen) since it was last added or changed through Apply, without hashing
// it, so that ChangedInPlace sees it changed in place after: a writer
// that applies its own events (engine.Tx) notes the blocks they make, or a
// middleware could rewrite a block an earlier one had just added, unseen.
func Note(t *Turn) {
	if n := len(t.Blocks); len(t.sums) < n {
		old := len(t.sums)
		t.sums = slices.Grow(t.sums, n-old)[:n]
		clear(t.sums[old:])
	}
	for i := range t.Blocks {
		b, s := &t.Blocks[i], &t.sums[i]
		if (s.ok || s.noted) && s.id == b.ID {
			continue
		}
		*s = blockSum{id: b.ID, shape: shapeOf(b), noted: true}
	}
}

// forget drops the cached digest of the block at index i, which the
// caller has just added or changed.
func (t *Turn) forget(i int) {
	if i < len(t.sums) {
		t.sums[i] = blockSum{}
	}
}

// hasher holds two layouts: one for the Turn and one for a block's
// digest, which is finished while the Turn's is still being written.
type hasher struct {
	turn, block layout
	keys        []string
}

var hashers = sync.Pool{New: func() any {
	return &hasher{
		turn:  layout{h: sha256.New(), buf: make([]byte, 0, 32<<10)},
		block: layout{h: sha256.New(), buf: make([]byte, 0, 4<<10)},
	}
}}

// layout feeds SHA-256 through a buffer, so that many small fields cost one
// large write.
type layout struct {
	h   hash.Hash
	buf []byte
	out []byte // scratch for Sum, so that a digest costs no allocation
}

func (l *layout) reset() { l.h.Reset(); l.buf = l.buf[:0] }

func (l *layout) flush() {
	l.h.Write(l.buf)
	l.buf = l.buf[:0]
}

func (l *layout) num(n uint64) {
	l.buf = binary.AppendUvarint(l.buf, n)
}

func (l *layout) str(s string) {
	l.num(uint64(len(s)))
	if len(l.buf)+len(s) > cap(l.buf) {
		l.flush()
		if len(s) > cap(l.buf) {
			l.h.Write([]byte(s))
			return
		}
	}
	l.buf = append(l.buf, s...)
}

// raw writes p without a length, for fixed-size fields (block digests).
func (l *layout) raw(p []byte) {
	if len(l.buf)+len(p) > cap(l.buf) {
		l.flush()
		if len(p) > cap(l.buf) {
			l.h.Write(p)
			return
		}
	}
	l.buf = append(l.buf, p...)
}

func (l *layout) strMap(m map[string]string, keys *[]string) {
	l.num(uint64(len(m)))
	if len(m) == 0 {
		return
	}
	ks := (*keys)[:0]
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	for _, k := range ks {
		l.str(k)
		l.str(m[k])
	}
	*keys = ks
}

// block writes a block's fields, the part of the layout v1 and v2 share.
func (l *layout) block(b *Block, keys *[]string) {
	l.str(b.ID)
	l.str(string(b.Kind))
	l.str(b.Text)
	l.str(string(b.Trust))
	l.strMap(b.Meta, keys)
	l.str(b.CallID)
	l.str(b.ToolName)
	l.str(b.Arguments)
	if b.IsError {
		l.num(1)
	} else {
		l.num(0)
	}
	l.str(b.Encrypted)
}

// sum appends the SHA-256 of what was written to dst.
func (l *layout) sum(dst []byte) []byte {
	l.flush()
	l.out = l.h.Sum(l.out[:0])
	return append(dst, l.out...)
}

func (l *layout) hex() string {
	l.flush()
	l.out = l.h.Sum(l.out[:0])
	return hex.EncodeToString(l.out)
}
