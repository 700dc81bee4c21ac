package calls

import (
	"encoding/json"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// TextParts returns the texts b's Text was read from, one a part, when
// the client wrote them as two or more parts of its item (Messages' system
// as a list of text blocks, a message's content as a list of parts), as
// the item b keeps (MetaItem) holds them; nil otherwise. A block's Text
// joins its item's parts into one (readContent): what the rules that
// read one part apart from the others look at is here.
func TextParts(b *events.Block) []string {
	item := b.Meta[MetaItem]
	if item == "" || b.Meta[MetaPart] != "" || !strings.Contains(b.Text, "\n") {
		return nil // one part at most: parts are joined by a newline
	}
	// One pass over the item (a long prompt is read at every call the
	// rules check): a part, or the content, of another shape is none.
	type textPart struct {
		Text string `json:"text"`
	}
	var parts []textPart
	if item[0] == '{' {
		var m struct {
			Content []textPart `json:"content"`
		}
		if json.Unmarshal([]byte(item), &m) != nil {
			return nil
		}
		parts = m.Content
	} else if json.Unmarshal([]byte(item), &parts) != nil {
		return nil
	}
	var texts []string
	for _, p := range parts {
		if p.Text != "" {
			texts = append(texts, p.Text)
		}
	}
	// The item is what the block was read from only if its parts join to
	// the block's text (a block edited since keeps the item it replaced).
	if len(texts) < 2 || strings.Join(texts, "\n") != b.Text {
		return nil
	}
	return texts
}
