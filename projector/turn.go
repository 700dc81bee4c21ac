package projector

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"

	"github.com/turnlog/turnlog/events"
	"github.com/vmihailenco/msgpack/v5"
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
func Hash(t *Turn) string {
	h := sha256.New()
	enc := msgpack.NewEncoder(h)
	enc.SetSortMapKeys(true)
	// Encoding into a hash cannot fail for these plain types. No blocks
	// and no data hash alike whether the slice or map is nil or empty: a
	// snapshot or a removal may turn one into the other, and the hash
	// replay recomputes must not change with it.
	if len(t.Blocks) == 0 {
		_ = enc.EncodeNil()
	} else {
		_ = enc.Encode(t.Blocks)
	}
	if len(t.Data) == 0 {
		_ = enc.EncodeNil()
	} else {
		_ = enc.Encode(t.Data)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// HashText is the hex SHA-256 of a text, used for system prompts and
// templates so that equal prompts have equal hashes across conversations.
func HashText(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
