package check

import (
	"strconv"
	"unicode/utf8"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// repeatedParts: the system block at i, which the client wrote as parts
// (Messages' system as a list of text blocks, a system or developer
// message's content as a list of parts), has two parts of the same text:
// the prompt sent twice in one, as a middleware that appends the system
// prompt to every request does to Messages' system. The block's text
// joins its parts, so no two system blocks are alike; the parts are read
// from the item the block keeps (calls.TextParts), once while the block
// and its item stay as they are (a long prompt is sent at every call).
// One finding a block, naming each text its parts repeat.
func (c *Checker) repeatedParts(in []events.Block, i int) (Finding, bool) {
	b := &in[i]
	item := b.Meta[calls.MetaItem]
	seen, ok := c.parts[b.ID]
	if !ok || seen.item != item || seen.text != b.Text {
		seen = partsSeen{item: item, text: b.Text, repeated: repeatedTexts(calls.TextParts(b))}
		if c.parts == nil {
			c.parts = map[string]partsSeen{}
		}
		c.parts[b.ID] = seen
	}
	if seen.repeated == "" {
		return Finding{}, false
	}
	return Finding{Rule: RuleDuplicateSystemPrompt, Blocks: ids(in, i), Detail: blockAt(in, i) + seen.repeated +
		": the system prompt sent again within one, as a middleware that appends it to every request does"}, true
}

// partsSeen is what repeatedParts found of a system block, with the text
// and item it read (the strings the block holds, not copies).
type partsSeen struct {
	item, text string
	// repeated says which parts repeat which text, "" for none.
	repeated string
}

// repeatedTexts says which of parts have the same text, "" when none do.
func repeatedTexts(parts []string) string {
	at := make(map[string][]int, len(parts))
	var order []string // the texts repeated, by their first part
	for k, p := range parts {
		at[p] = append(at[p], k)
		if len(at[p]) == 2 {
			order = append(order, p)
		}
	}
	if len(order) == 0 {
		return ""
	}
	d := " is written as " + itoa(len(parts)) + " text parts, of which "
	for n, p := range order {
		if n > 0 {
			d += "; "
		}
		d += "parts " + joinIndexes(at[p]) + " are the same text, " + excerpt(p) + " (" + itoa(len(p)) + " bytes)"
	}
	return d
}

// joinIndexes writes indexes as "0 and 1", "0, 2 and 3".
func joinIndexes(idx []int) string {
	s := ""
	for n, k := range idx {
		switch {
		case n == 0:
		case n == len(idx)-1:
			s += " and "
		default:
			s += ", "
		}
		s += itoa(k)
	}
	return s
}

// maxExcerpt bounds the text a finding quotes.
const maxExcerpt = 60

// excerpt quotes text for a finding's detail, its first maxExcerpt bytes
// (cut at a character's start) when it is longer.
func excerpt(text string) string {
	if len(text) <= maxExcerpt {
		return strconv.Quote(text)
	}
	cut := maxExcerpt
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return strconv.Quote(text[:cut]) + "…"
}
