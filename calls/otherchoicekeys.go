package calls

// This file holds how another choice of a call is recognised when an app
// sends it back, kept whole or left out of the record (TrimOtherChoices):
// a left-out choice keeps, beside its size, the content keys of its
// blocks, so that going on with it is going on with the model's answer
// as it is for a choice kept whole.

import (
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// ChoiceKey is a block of another choice of a call as a block an app
// sends back is compared with it (Matches): its content key (Key), the
// key of its tool call read as doubles (DoublesKey) and the digest of its
// thought parts (SameThought). It is what a choice left out of the record
// for its size keeps of each of its blocks, so that it holds no content.
type ChoiceKey struct {
	Kind    events.Kind
	Key     [32]byte
	Doubles [32]byte // when HasDoubles
	// HasDoubles is set for a tool call whose arguments say something
	// their doubles do not (DoublesKey).
	HasDoubles bool
	// Thought is the digest of a text's thought parts, "" for none.
	Thought string
}

// KeyOfChoiceBlock returns b, a block of another choice, as ChoiceKey.
func KeyOfChoiceBlock(b *events.Block) ChoiceKey {
	k := ChoiceKey{Kind: b.Kind, Key: Key(b), Thought: b.Meta[metaThought]}
	k.Doubles, k.HasDoubles = DoublesKey(b)
	return k
}

// Matches reports whether b, a block sent back, is the choice's block:
// the same content as threading compares it (Key, or the tool call read
// as doubles), and no other thinking (SameThought).
func (k ChoiceKey) Matches(b *events.Block) bool {
	if b.Kind != k.Kind {
		return false
	}
	got := Key(b)
	if got != k.Key && (!k.HasDoubles || got != k.Doubles) {
		return false
	}
	if k.Kind != events.KindLLMText {
		return true
	}
	t := b.Meta[metaThought]
	return k.Thought == "" || t == "" || k.Thought == t
}

// OtherChoiceKeys reads a call's other choices
// (events.InferenceFinished.OtherChoices) as the keys of their blocks: a
// choice kept whole as OtherChoiceBlocks reads it, one left out for its
// size ({"index", "omitted_bytes", "keys"}) from the keys it kept. A
// choice left out by an older gateway (no "keys"), or whose message
// cannot be read, has none: it cannot be recognised.
func OtherChoiceKeys(otherChoices string) ([][]ChoiceKey, error) {
	var choices []struct {
		Message      json.RawMessage    `json:"message"`
		OmittedBytes *int               `json:"omitted_bytes"`
		Keys         []omittedChoiceKey `json:"keys"`
	}
	if err := json.Unmarshal([]byte(otherChoices), &choices); err != nil {
		return nil, fmt.Errorf("other choices: %w", err)
	}
	out := make([][]ChoiceKey, len(choices))
	for i, c := range choices {
		if c.Message == nil && c.OmittedBytes != nil {
			out[i] = readOmittedKeys(c.Keys)
			continue
		}
		bs, err := chatBlocks(withContentParts(c.Message))
		if err != nil {
			continue
		}
		for j := range bs {
			out[i] = append(out[i], KeyOfChoiceBlock(&bs[j]))
		}
	}
	return out, nil
}

// omittedChoiceKey is a ChoiceKey as a left-out choice's marker keeps it
// ("keys"), its digests in hex.
type omittedChoiceKey struct {
	Kind    events.Kind `json:"kind"`
	Key     string      `json:"key"`
	Doubles string      `json:"doubles,omitempty"`
	Thought string      `json:"thought,omitempty"`
}

// omittedKeys returns the "keys" of a left-out choice's marker: those of
// the blocks of c, a choice object as the response wrote it; nil when
// its message cannot be read.
func omittedKeys(c json.RawMessage) []omittedChoiceKey {
	var choice struct {
		Message json.RawMessage `json:"message"`
	}
	if json.Unmarshal(c, &choice) != nil || choice.Message == nil {
		return nil
	}
	bs, err := chatBlocks(withContentParts(choice.Message))
	if err != nil {
		return nil
	}
	keys := make([]omittedChoiceKey, 0, len(bs))
	for i := range bs {
		k := KeyOfChoiceBlock(&bs[i])
		ok := omittedChoiceKey{Kind: k.Kind, Key: hex.EncodeToString(k.Key[:]), Thought: k.Thought}
		if k.HasDoubles {
			ok.Doubles = hex.EncodeToString(k.Doubles[:])
		}
		keys = append(keys, ok)
	}
	return keys
}

// readOmittedKeys reads a left-out choice's "keys"; nil when one cannot
// be read (the choice is then not recognised, never taken for another).
func readOmittedKeys(keys []omittedChoiceKey) []ChoiceKey {
	out := make([]ChoiceKey, 0, len(keys))
	for _, k := range keys {
		ck := ChoiceKey{Kind: k.Kind, Thought: k.Thought}
		if !readDigest(k.Key, &ck.Key) {
			return nil
		}
		if k.Doubles != "" {
			if !readDigest(k.Doubles, &ck.Doubles) {
				return nil
			}
			ck.HasDoubles = true
		}
		out = append(out, ck)
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// readDigest reads a hex SHA-256 digest into d.
func readDigest(s string, d *[32]byte) bool {
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(d) {
		return false
	}
	copy(d[:], b)
	return true
}
