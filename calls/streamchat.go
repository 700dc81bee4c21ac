package calls

// This file holds how a streamed Chat Completions response is read: its
// first choice, which the conversation goes on with, and the others (a
// request's "n" above 1), kept whole.

import (
	"bytes"
	"encoding/json"
	"strings"
)

// otherChoice is a streamed choice after the first, kept whole in the
// record (Output.OtherChoices).
type otherChoice struct {
	text   strings.Builder
	calls  map[int]*streamCall
	finish string
}

func (s *Stream) chat(data []byte) {
	if string(bytes.TrimSpace(data)) == "[DONE]" {
		s.done = true
		return
	}
	var c struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Content string `json:"content"`
				// FunctionCall is legacy function calling's (no ID,
				// one call a message).
				FunctionCall *functionCall `json:"function_call"`
				ToolCalls    []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *usage    `json:"usage"`
		Error *apiError `json:"error"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		s.fail("a stream event is not JSON: " + err.Error())
		return
	}
	if c.Error != nil {
		s.fail(c.Error.String())
		s.done = true
		return
	}
	if c.ID != "" {
		s.out.ResponseID = c.ID
	}
	if c.Model != "" {
		s.out.Model = c.Model
	}
	c.Usage.fill(&s.out)
	for _, ch := range c.Choices {
		text, calls, finish := &s.chatText, s.chatCalls, &s.out.StopReason
		if ch.Index != 0 {
			// Another choice (the request's "n"): kept beside the first,
			// which the conversation goes on with.
			if s.others == nil {
				s.others = map[int]*otherChoice{}
			}
			o := s.others[ch.Index]
			if o == nil {
				o = &otherChoice{calls: map[int]*streamCall{}}
				s.others[ch.Index] = o
			}
			text, calls, finish = &o.text, o.calls, &o.finish
		}
		text.WriteString(ch.Delta.Content)
		if fc := ch.Delta.FunctionCall; fc != nil {
			call := calls[legacyCall]
			if call == nil {
				call = &streamCall{legacy: true}
				calls[legacyCall] = call
			}
			if fc.Name != "" {
				call.name = fc.Name
			}
			call.args.WriteString(fc.Arguments)
		}
		for _, tc := range ch.Delta.ToolCalls {
			call := calls[tc.Index]
			if call == nil {
				call = &streamCall{}
				calls[tc.Index] = call
			}
			if tc.ID != "" {
				call.id = tc.ID
			}
			if tc.Function.Name != "" {
				call.name = tc.Function.Name
			}
			call.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			*finish = ch.FinishReason
		}
	}
}

// otherChoices is the JSON array of the streamed choices after the first,
// each as a non-streamed response writes a choice: {"index", "message":
// {"role", "content", "tool_calls"}, "finish_reason"}.
func (s *Stream) otherChoices() string {
	if len(s.others) == 0 {
		return ""
	}
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role         string        `json:"role"`
		Content      *string       `json:"content"`
		FunctionCall *functionCall `json:"function_call,omitempty"`
		ToolCalls    []call        `json:"tool_calls,omitempty"`
	}
	type choice struct {
		Index        int     `json:"index"`
		Message      message `json:"message"`
		FinishReason string  `json:"finish_reason"`
	}
	var out []choice
	for _, i := range sortedInts(s.others) {
		o := s.others[i]
		c := choice{Index: i, Message: message{Role: "assistant"}, FinishReason: o.finish}
		if o.text.Len() > 0 || len(o.calls) == 0 {
			text := o.text.String()
			c.Message.Content = &text
		}
		for _, j := range sortedInts(o.calls) {
			if o.calls[j].legacy {
				c.Message.FunctionCall = &functionCall{Name: o.calls[j].name, Arguments: o.calls[j].args.String()}
				continue
			}
			tc := call{ID: o.calls[j].id, Type: "function"}
			tc.Function.Name, tc.Function.Arguments = o.calls[j].name, o.calls[j].args.String()
			c.Message.ToolCalls = append(c.Message.ToolCalls, tc)
		}
		out = append(out, c)
	}
	b, _ := json.Marshal(out)
	return string(b)
}

// legacyCall is where a stream's legacy function_call is kept among its
// tool calls (before them: a message has one or the other).
const legacyCall = -1
