package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// WordCount is the demo tool: it counts the words of {"text": "..."}. The
// scripted engine's default script calls it ("count words in ..."), and
// profile.Build offers it when a program gives no tools of its own, so an
// installation shows the tool loop out of the box. It lives here, beside
// Tools, so that offering it needs no engine package.
func WordCount() Tool {
	return Tool{
		Spec: ToolSpec{
			Name:        "word_count",
			Description: "Counts the words in a text.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}`),
		},
		Func: func(ctx context.Context, args json.RawMessage) (string, error) {
			var a struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(args, &a); err != nil {
				return "", fmt.Errorf("arguments: %w", err)
			}
			return fmt.Sprint(len(strings.Fields(a.Text))), nil
		},
	}
}
