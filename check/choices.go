package check

// This file holds the allowed move "another choice taken": a Chat
// Completions call that asked for several answers ("n" above 1) has its
// first choice as its output and keeps the others in inference.finished
// (other_choices); an app that goes on with one of the others sends that
// one back instead of the first.

import (
	"encoding/json"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// noteChoices keeps, at a call's inference.finished, its other choices as
// what a model reads of them, and its output (the first choice).
func (iv *interval) noteChoices(p events.InferenceFinished) {
	iv.choices, iv.firstChoice = nil, nil
	if p.OtherChoices == "" {
		return
	}
	var others []struct {
		Message struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"message"`
	}
	if json.Unmarshal([]byte(p.OtherChoices), &others) != nil {
		return
	}
	for _, o := range others {
		var ch []content
		if m := o.Message; m.Content != nil && (*m.Content != "" || len(m.ToolCalls) == 0) {
			ch = append(ch, content{kind: events.KindLLMText, text: *m.Content})
		}
		for _, tc := range o.Message.ToolCalls {
			ch = append(ch, content{kind: events.KindToolCall, callID: tc.ID, tool: tc.Function.Name, args: tc.Function.Arguments})
		}
		if len(ch) > 0 {
			iv.choices = append(iv.choices, ch)
		}
	}
	if len(iv.choices) > 0 {
		iv.firstChoice = append([]string(nil), iv.outputs...)
	}
}

// choiceTaken returns the blocks of the previous call's first choice when
// the input goes on with another of its choices instead: every block of
// that choice (its text, each tool call by its ID, tool and arguments, as
// the model wrote them, compared as JSON: one sent back edited is a
// rewrite) is among the
// blocks the request of call, whose inference.started it is, added. nil
// otherwise.
func (c *Checker) choiceTaken(in []events.Block, call events.Event) map[string]bool {
	for _, ch := range c.since.choices {
		if !c.since.sentChoice(in, ch, call) {
			continue
		}
		taken := make(map[string]bool, len(c.since.firstChoice))
		for _, id := range c.since.firstChoice {
			taken[id] = true
		}
		return taken
	}
	return nil
}

// sentChoice reports whether every block of choice ch is in in, added by
// the request of call.
func (iv *interval) sentChoice(in []events.Block, ch []content, call events.Event) bool {
	for _, want := range ch {
		found := false
		for i := range in {
			b := &in[i]
			if b.Kind != want.kind || !iv.callInput(b.ID, call) {
				continue
			}
			if want.kind == events.KindLLMText && b.Text == want.text ||
				want.kind == events.KindToolCall && b.CallID == want.callID && b.ToolName == want.tool && calls.SameArguments(b.Arguments, want.args) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
