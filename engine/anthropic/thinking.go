package anthropic

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/turnlog/turnlog/events"
)

// MetaThinking marks a reasoning block that holds a run of thinking and
// redacted_thinking blocks (see the package documentation); its value is
// the storage format, ThinkingFormat.
const MetaThinking = "anthropic.thinking"

// ThinkingFormat is the value of MetaThinking this package writes and reads.
const ThinkingFormat = "v1"

// thinkingSeparator joins the texts of a run's thinking blocks in Text.
const thinkingSeparator = "\n\n"

// thinkingEntry is one block of a run, as Encrypted stores it.
type thinkingEntry struct {
	Type string `json:"type"` // "thinking" or "redacted_thinking"
	// Signature and Length (of the thinking text in Text, in bytes) are
	// those of a thinking block.
	Signature string `json:"signature,omitempty"`
	Length    int    `json:"length,omitempty"`
	// Data is a redacted_thinking block's opaque content.
	Data string `json:"data,omitempty"`
}

// thinkingBlock is the reasoning block that stores a run of thinking and
// redacted_thinking content blocks of a response, in order.
func thinkingBlock(run []sdk.ContentBlockUnion) (events.Block, error) {
	var (
		entries = make([]thinkingEntry, 0, len(run))
		texts   []string
	)
	for _, c := range run {
		switch c.Type {
		case "thinking":
			entries = append(entries, thinkingEntry{Type: c.Type, Signature: c.Signature, Length: len(c.Thinking)})
			texts = append(texts, c.Thinking)
		case "redacted_thinking":
			entries = append(entries, thinkingEntry{Type: c.Type, Data: c.Data})
		default:
			return events.Block{}, fmt.Errorf("content block %q is not thinking", c.Type)
		}
	}
	raw, err := json.Marshal(entries)
	if err != nil {
		return events.Block{}, err
	}
	return events.Block{
		Kind:      events.KindReasoning,
		Text:      strings.Join(texts, thinkingSeparator),
		Encrypted: string(raw),
		Meta:      map[string]string{MetaThinking: ThinkingFormat},
	}, nil
}

// errNotOurs: a reasoning block this engine did not write.
var errNotOurs = errors.New("not an anthropic thinking block")

// thinkingParams rebuilds the content blocks a reasoning block stores,
// byte for byte, or returns errNotOurs for another provider's block.
func thinkingParams(b events.Block) ([]sdk.ContentBlockParamUnion, error) {
	if b.Meta[MetaThinking] == "" {
		return nil, errNotOurs
	}
	if f := b.Meta[MetaThinking]; f != ThinkingFormat {
		return nil, fmt.Errorf("thinking storage format %q is unknown to this turnlog (it knows %q)", f, ThinkingFormat)
	}
	var entries []thinkingEntry
	if err := json.Unmarshal([]byte(b.Encrypted), &entries); err != nil || len(entries) == 0 {
		return nil, fmt.Errorf("the stored thinking blocks are not a JSON array of blocks; the log was edited or written by another program")
	}
	out := make([]sdk.ContentBlockParamUnion, 0, len(entries))
	off, first := 0, true
	for i, e := range entries {
		switch e.Type {
		case "thinking":
			if !first {
				if !strings.HasPrefix(b.Text[off:], thinkingSeparator) {
					return nil, fmt.Errorf("thinking block %d does not start where the stored lengths say; the text was edited", i)
				}
				off += len(thinkingSeparator)
			}
			first = false
			if e.Length < 0 || off+e.Length > len(b.Text) {
				return nil, fmt.Errorf("thinking block %d is longer than the stored text; the text was edited", i)
			}
			if e.Signature == "" {
				return nil, fmt.Errorf("thinking block %d has no signature; the API would reject it", i)
			}
			out = append(out, sdk.NewThinkingBlock(e.Signature, b.Text[off:off+e.Length]))
			off += e.Length
		case "redacted_thinking":
			if e.Data == "" {
				return nil, fmt.Errorf("redacted thinking block %d has no data", i)
			}
			out = append(out, sdk.NewRedactedThinkingBlock(e.Data))
		default:
			return nil, fmt.Errorf("stored block %d has type %q, not thinking or redacted_thinking", i, e.Type)
		}
	}
	if off != len(b.Text) {
		return nil, fmt.Errorf("the text is %d bytes longer than its thinking blocks; the text was edited", len(b.Text)-off)
	}
	return out, nil
}
