package projector

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"hash"
	"maps"
	"slices"
	"sync"

	"github.com/turnlog/turnlog/events"
)

// Block is one element of a Turn. It is the events package's Block, so that
// blocks copied into events (forks, summaries, splits) and blocks in the
// projection are the same value.
type Block = events.Block

// Turn is a conversation as the next model call would receive it.
type Turn struct {
	Conversation string            `msgpack:"conv" json:"conversation"`
	Blocks       []Block           `msgpack:"blocks" json:"blocks"`
	Data         map[string]string `msgpack:"data,omitempty" json:"data,omitempty"`
	// Events counts the events folded in: the Turn is <Conversation>@<Events>.
	Events int `msgpack:"events" json:"events"`
	// Seq is the stream sequence of the last message folded in, kept by the
	// log so the next append can name it as the expected sequence. The fold
	// itself never sets it.
	Seq uint64 `msgpack:"seq" json:"seq,omitempty"`

	pos map[string]int // block ID -> index; nil when it must be rebuilt
}

// New returns the empty Turn of a conversation, before its first event.
func New(conversation string) *Turn {
	return &Turn{Conversation: conversation}
}

// Clone returns a deep copy, so a cached projection can be handed out and
// changed without touching the cache.
func (t *Turn) Clone() *Turn {
	c := &Turn{Conversation: t.Conversation, Events: t.Events, Seq: t.Seq}
	if t.Blocks != nil {
		c.Blocks = make([]Block, len(t.Blocks), len(t.Blocks)+8)
		for i, b := range t.Blocks {
			c.Blocks[i] = b.Clone()
		}
	}
	if t.Data != nil {
		c.Data = maps.Clone(t.Data)
	}
	return c
}

// SystemPrompt returns the active system prompt, which by definition is the
// first system block, and its index. ok is false when there is none.
func (t *Turn) SystemPrompt() (b Block, index int, ok bool) {
	for i, b := range t.Blocks {
		if b.Kind == events.KindSystem {
			return b, i, true
		}
	}
	return Block{}, -1, false
}

// Index returns the position of the block with the given ID, or -1.
func (t *Turn) Index(id string) int {
	if i, ok := t.index()[id]; ok {
		return i
	}
	return -1
}

// Block returns the block with the given ID.
func (t *Turn) Block(id string) (Block, bool) {
	if i := t.Index(id); i >= 0 {
		return t.Blocks[i], true
	}
	return Block{}, false
}

func (t *Turn) index() map[string]int {
	if t.pos == nil || len(t.pos) != len(t.Blocks) {
		t.pos = make(map[string]int, len(t.Blocks))
		for i, b := range t.Blocks {
			t.pos[b.ID] = i
		}
	}
	return t.pos
}

// Hash is the hex SHA-256 of the Turn's content as a model receives it
// (blocks in order and data), independent of the conversation name and the
// log positions. inference.started records it so anyone can later prove,
// by re-projecting the log, which exact input a model call had.
//
// The hashed form is a fixed, versioned layout (every field length-prefixed,
// map keys sorted), written without reflection: it runs before every model
// call, so it must cost microseconds, not the hundreds a generic encoder
// takes on a long Turn. A nil and an empty map or block list hash alike: a
// snapshot or a removal may turn one into the other.
func Hash(t *Turn) string {
	h := hashers.Get().(*hasher)
	defer hashers.Put(h)
	h.reset()
	h.str("turnlog.turn.v1")
	h.num(uint64(len(t.Blocks)))
	for i := range t.Blocks {
		b := &t.Blocks[i]
		h.str(b.ID)
		h.str(string(b.Kind))
		h.str(b.Text)
		h.str(string(b.Trust))
		h.strMap(b.Meta)
		h.str(b.CallID)
		h.str(b.ToolName)
		h.str(b.Arguments)
		if b.IsError {
			h.num(1)
		} else {
			h.num(0)
		}
		h.str(b.Encrypted)
	}
	h.strMap(t.Data)
	return h.sum()
}

// hasher feeds SHA-256 through a buffer, so that many small fields cost one
// large write.
type hasher struct {
	h    hash.Hash
	buf  []byte
	keys []string
}

var hashers = sync.Pool{New: func() any { return &hasher{h: sha256.New(), buf: make([]byte, 0, 32<<10)} }}

func (h *hasher) reset() { h.h.Reset(); h.buf = h.buf[:0] }

func (h *hasher) flush() {
	h.h.Write(h.buf)
	h.buf = h.buf[:0]
}

func (h *hasher) num(n uint64) {
	h.buf = binary.AppendUvarint(h.buf, n)
}

func (h *hasher) str(s string) {
	h.num(uint64(len(s)))
	if len(h.buf)+len(s) > cap(h.buf) {
		h.flush()
		if len(s) > cap(h.buf) {
			h.h.Write([]byte(s))
			return
		}
	}
	h.buf = append(h.buf, s...)
}

func (h *hasher) strMap(m map[string]string) {
	h.num(uint64(len(m)))
	if len(m) == 0 {
		return
	}
	h.keys = h.keys[:0]
	for k := range m {
		h.keys = append(h.keys, k)
	}
	slices.Sort(h.keys)
	for _, k := range h.keys {
		h.str(k)
		h.str(m[k])
	}
}

func (h *hasher) sum() string {
	h.flush()
	var out [sha256.Size]byte
	return hex.EncodeToString(h.h.Sum(out[:0]))
}

// HashText is the hex SHA-256 of a text, used for system prompts and
// templates so that equal prompts have equal hashes across conversations.
func HashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
