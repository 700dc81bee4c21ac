package check

import (
	"strconv"
	"strings"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/rolemarker"
)

// roleTokens are chat templates' role tokens: a text that holds one tries
// to open a message of another role in the model's own format.
var roleTokens = []string{"<|im_start|>", "<|start_header_id|>", "<|system|>", "[INST]", "<<SYS>>"}

// roleMarkers: a user message or tool result past the first same blocks
// (an earlier call looked at those), not trusted, holds a role marker or
// a role token, in its text or in a text file its item carries. One
// finding a block, naming the first.
func (c *Checker) roleMarkers(in []events.Block, same int) []Finding {
	var fs []Finding
	for i := same; i < len(in); i++ {
		b := &in[i]
		if (b.Kind != events.KindUser && b.Kind != events.KindToolResult) || b.Trust == events.Trusted {
			continue
		}
		what := roleMarkerIn(b.Text)
		if what == "" {
			// A text file the item carries (calls.DocumentTexts) is read
			// by the model as plainly as the message's text.
			what = c.documentMarker(b)
		}
		if what != "" {
			fs = append(fs, Finding{Rule: RuleRoleMarkerInUntrustedText, Blocks: ids(in, i),
				Detail: blockAt(in, i) + " holds " + what + ": text that is not trusted speaks as another role, as an instruction smuggled in does; the model may take it as one"})
		}
	}
	return fs
}

// roleMarkerIn says what role marker or role token text holds, "" for
// none.
func roleMarkerIn(text string) string {
	if m := rolemarker.Find(text, false); len(m) > 0 {
		return "the role marker " + strconv.Quote(text[m[0].Start:m[0].Body]) + " at line " + itoa(m[0].Line)
	}
	for _, tok := range roleTokens {
		if strings.Contains(text, tok) {
			return "the chat template's role token " + strconv.Quote(tok)
		}
	}
	return ""
}

// documentMarker says what role marker or role token a text file the
// block's item carries holds (calls.DocumentTexts), "" for none. Each
// block is read once: a call whose input changed early (an app that
// drops its oldest messages) would otherwise parse every document after
// the change again at every call.
func (c *Checker) documentMarker(b *events.Block) string {
	key := b.ID + "\x00" + itoa(len(b.Meta[calls.MetaItem]))
	if what, ok := c.documents[key]; ok {
		return what
	}
	what := ""
	for _, doc := range calls.DocumentTexts(b) {
		if what = roleMarkerIn(doc); what != "" {
			what += " of a text document its message carries"
			break
		}
	}
	if c.documents == nil {
		c.documents = map[string]string{}
	}
	c.documents[key] = what
	return what
}
