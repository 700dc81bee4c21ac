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
// whose message cannot be read has no blocks.
func OtherChoiceBlocks(otherChoices string) ([][]events.Block, error) {
	var choices []struct {
		Message json.RawMessage `json:"message"`
	}
	if err := json.Unmarshal([]byte(otherChoices), &choices); err != nil {
		return nil, fmt.Errorf("other choices: %w", err)
	}
	out := make([][]events.Block, 0, len(choices))
	for _, c := range choices {
		bs, err := chatBlocks(c.Message)
		if err != nil {
			bs = nil
		}
		out = append(out, bs)
	}
	return out, nil
}
