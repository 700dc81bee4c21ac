package calls

import (
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
)

// OtherChoiceBlocks reads a call's other choices
// (events.InferenceFinished.OtherChoices: a Chat Completions call that
// asked for several answers) into blocks, each choice's message as the
// gateway reads an app's message, so that a choice the app goes on with
// compares with what it sends back as any history does (Key). A choice
// whose message cannot be read, or left out of the record for its size
// (TrimOtherChoices), has no blocks: OtherChoiceKeys reads that one too.
func OtherChoiceBlocks(otherChoices string) ([][]events.Block, error) {
	var choices []struct {
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal([]byte(otherChoices), &choices); err != nil {
		return nil, fmt.Errorf("other choices: %w", err)
	}
	out := make([][]events.Block, 0, len(choices))
	for _, c := range choices {
		bs, err := chatBlocks(withContentParts(c.Message))
		if err != nil {
			bs = nil
		}
		out = append(out, bs)
	}
	return out, nil
}

// withContentParts is a streamed choice's message (otherChoices) with its
// content parts that are not text ("content_parts") put back before its
// text in "content", as the choice not streamed writes its content and
// the app sends it back: its block's digest is then the same. A message
// without them is returned as it is.
func withContentParts(msg json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || len(m["content_parts"]) == 0 || m["content_parts"][0] != '[' {
		return msg
	}
	var parts []json.RawMessage
	var text *string
	if json.Unmarshal(m["content_parts"], &parts) != nil || json.Unmarshal(m["content"], &text) != nil {
		return msg
	}
	if text != nil && *text != "" {
		b, _ := json.Marshal(struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", *text})
		parts = append(parts, b)
	}
	m["content"] = json.RawMessage(jsonArray(parts))
	delete(m, "content_parts")
	b, err := json.Marshal(m)
	if err != nil {
		return msg
	}
	return b
}
