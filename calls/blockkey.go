package calls

// This file holds how blocks are compared by content: the key threading
// and the input's plan match blocks by, and the gateway metadata a block
// keeps of how the client wrote it.

import (
	"crypto/sha256"
	"encoding/binary"

	"github.com/turnlog/turnlog/events"
)

// metaDiff returns what to merge into have to get want's gateway keys
// ("" deletes), nil when nothing differs.
func metaDiff(have, want map[string]string) map[string]string {
	d := map[string]string{}
	for _, k := range []string{MetaItem, MetaPart, MetaField, "gateway.type", events.MetaParts} {
		if have[k] != want[k] {
			d[k] = want[k]
		}
	}
	if len(d) == 0 {
		return nil
	}
	return d
}

// sameContent reports whether b, a block sent, has the content Key
// compares of a, a block recorded (a tool call's arguments: sameArguments).
func sameContent(a, b *events.Block) bool {
	return a.Kind == b.Kind && a.Text == b.Text && a.CallID == b.CallID && a.ToolName == b.ToolName &&
		a.Encrypted == b.Encrypted && a.IsError == b.IsError &&
		a.Meta["gateway.type"] == b.Meta["gateway.type"] && a.Meta[events.MetaParts] == b.Meta[events.MetaParts] &&
		(a.Arguments == b.Arguments || a.Kind == events.KindToolCall && sameArguments(a.Arguments, b.Arguments))
}

// sameArguments reports whether b, a tool call's arguments sent back, are
// a, the arguments recorded (the model's), as content compares them
// (argumentsKey): an SDK that parses the model's arguments and writes
// them back with its own JSON writer sends the same call, and so does one
// that reads their numbers as doubles (readAsDoubles: JavaScript's
// JSON.parse and JSON.stringify).
func sameArguments(a, b string) bool {
	return a == b || argumentsKey(a) == argumentsKey(b) || readAsDoubles(a, b)
}

// argumentsKey is a tool call's arguments as content compares them: their
// canonical JSON (Canonical), so that an SDK that parses the model's
// arguments and writes them back with its own JSON writer ({"city":
// "Paris"} sent back as {"city":"Paris"}) re-sends the same call; the
// text itself when it is not JSON, or when its canonical form leaves out
// something it says (canonicalExact: a name given twice, an integer past
// 2^53): another text with that canonical form says something else to
// the model, which reads the text, and must not pass for the model's own.
func argumentsKey(args string) string {
	if args == "" {
		return ""
	}
	c, exact, err := canonicalExact([]byte(args))
	if err != nil || !exact {
		return args
	}
	return string(c)
}

// Key is a block's content as threading and the delta compare it: kind,
// text, tool call (its arguments as JSON, argumentsKey) and result,
// encrypted reasoning, the digest of its other content (events.MetaParts);
// not its ID or how the client writes it.
func Key(b *events.Block) [32]byte { return keyOf(b, true) }

// legacyKey is Key as turnlog computed it before tool calls' arguments
// were compared as JSON (their text as written): the keys of states
// recorded then, which erase still finds (IndexedKeys).
func legacyKey(b *events.Block) [32]byte { return keyOf(b, false) }

func keyOf(b *events.Block, jsonArgs bool) [32]byte {
	h := sha256.New()
	var n [binary.MaxVarintLen64]byte
	str := func(s string) {
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	str(string(b.Kind))
	str(b.Text)
	str(b.CallID)
	str(b.ToolName)
	if jsonArgs && b.Kind == events.KindToolCall {
		str(argumentsKey(b.Arguments))
	} else {
		str(b.Arguments)
	}
	str(b.Encrypted)
	str(b.Meta["gateway.type"])
	if parts := b.Meta[events.MetaParts]; parts != "" {
		// Only when set: the keys of blocks without it are those
		// recorded before it existed.
		str(parts)
	}
	if b.IsError {
		str("1")
	} else {
		str("")
	}
	var k [32]byte
	h.Sum(k[:0])
	return k
}
