package calls

// This file holds how a streamed Chat Completions response is read: its
// first choice, which the conversation goes on with, and the others (a
// request's "n" above 1), kept whole.

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/turnlog/turnlog/events"
)

// otherChoice is a streamed choice after the first, kept whole in the
// record (Output.OtherChoices).
type otherChoice struct {
	text, refusal strings.Builder
	calls         map[int]*streamCall
	finish        string
	logprobs      streamLogprobs
	annotations   streamedList
	said          choiceSaid
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
				// Content is a string, or a list of parts (some
				// OpenAI-compatible servers: see deltaContent).
				Content json.RawMessage `json:"content"`
				// Refusal and Audio: a refusal is streamed in its own
				// deltas; a spoken answer names its audio.
				Refusal string `json:"refusal"`
				// Annotations: the sources a model that searched cites.
				Annotations []json.RawMessage `json:"annotations"`
				// ReasoningContent and Reasoning: the reasoning
				// OpenAI-compatible servers of reasoning models stream
				// (DeepSeek, vLLM: reasoning_content; Ollama,
				// OpenRouter: reasoning), read when a string.
				ReasoningContent json.RawMessage `json:"reasoning_content"`
				Reasoning        json.RawMessage `json:"reasoning"`
				Audio            *streamedAudio  `json:"audio"`
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
			FinishReason string          `json:"finish_reason"`
			Logprobs     json.RawMessage `json:"logprobs"`
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
		s.transient = s.transient || c.Error.transient()
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
		text, refusal, calls, finish, logprobs, annotations, said := &s.chatText, &s.chatRefusal, s.chatCalls, &s.out.StopReason, &s.chatLogp, &s.chatAnnotations, &s.chatSaid
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
			text, refusal, calls, finish, logprobs, annotations, said = &o.text, &o.refusal, o.calls, &o.finish, &o.logprobs, &o.annotations, &o.said
		}
		logprobs.add(ch.Logprobs)
		annotations.add(ch.Delta.Annotations...)
		said.content(text, ch.Delta.Content)
		refusal.WriteString(ch.Delta.Refusal)
		said.add(ch.Delta.ReasoningContent, ch.Delta.Reasoning, ch.Delta.Audio)
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
// {"role", "content", "tool_calls", and what it said beside them:
// "reasoning_content" or "reasoning", "audio"}, "finish_reason",
// "logprobs"}; the
// logprobs past budget (spent in order) are {"omitted_bytes": n}, and so
// are the annotations, and the content parts, past what MaxStreamedBytes
// leaves after the first choice's (one bound for the answer's cited
// sources, one for its parts, whatever its "n").
func (s *Stream) otherChoices(budget int) string {
	if len(s.others) == 0 {
		return ""
	}
	cited := MaxStreamedBytes - min(s.chatAnnotations.size, MaxStreamedBytes)
	// The content parts too: one bound for the other choices' together
	// (a choice's long thinking fills one bound by itself).
	parted := MaxStreamedBytes - min(len(s.chatSaid.parts.json()), MaxStreamedBytes)
	type call struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	type message struct {
		Role         string          `json:"role"`
		Content      *string         `json:"content"`
		Refusal      string          `json:"refusal,omitempty"`
		Annotations  json.RawMessage `json:"annotations,omitempty"`
		FunctionCall *functionCall   `json:"function_call,omitempty"`
		ToolCalls    []call          `json:"tool_calls,omitempty"`
		// ReasoningContent or Reasoning, and Audio: what the choice
		// said beside its content (choiceSaid).
		ReasoningContent *string        `json:"reasoning_content,omitempty"`
		Reasoning        *string        `json:"reasoning,omitempty"`
		Audio            *streamedAudio `json:"audio,omitempty"`
		// ContentParts: its content parts that are not text
		// (choiceSaid.parts).
		ContentParts json.RawMessage `json:"content_parts,omitempty"`
	}
	type choice struct {
		Index        int             `json:"index"`
		Message      message         `json:"message"`
		FinishReason string          `json:"finish_reason"`
		Logprobs     json.RawMessage `json:"logprobs,omitempty"`
	}
	var out []choice
	for _, i := range sortedInts(s.others) {
		o := s.others[i]
		c := choice{Index: i, Message: message{Role: "assistant"}, FinishReason: o.finish}
		switch lp := o.logprobs.json(); {
		case o.logprobs.omitted:
			c.Logprobs, budget = json.RawMessage(omittedJSON(o.logprobs.size)), 0
		case lp == "":
		case len(lp) <= budget:
			c.Logprobs, budget = json.RawMessage(lp), budget-len(lp)
		default:
			c.Logprobs, budget = json.RawMessage(omittedJSON(len(lp))), 0
		}
		if o.text.Len() > 0 || len(o.calls) == 0 && o.refusal.Len() == 0 {
			text := o.text.String()
			c.Message.Content = &text
		}
		c.Message.Refusal = o.refusal.String()
		if name := o.said.reasoningName; name != "" {
			r := o.said.reasoning.String()
			if name == "reasoning" {
				c.Message.Reasoning = &r
			} else {
				c.Message.ReasoningContent = &r
			}
		}
		if o.said.audio != "" || o.said.transcript.Len() > 0 {
			c.Message.Audio = &streamedAudio{o.said.audio, o.said.transcript.String()}
		}
		switch a := o.said.parts.json(); {
		case len(a) <= parted:
			c.Message.ContentParts, parted = a, parted-len(a)
		default:
			c.Message.ContentParts, parted = json.RawMessage(omittedJSON(len(a))), 0
		}
		switch a := o.annotations.array(); {
		case len(a) <= cited:
			c.Message.Annotations, cited = a, cited-len(a)
		default:
			c.Message.Annotations, cited = json.RawMessage(omittedJSON(o.annotations.size)), 0
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

// chatBlock is the streamed first choice's message block: its text, and
// the digest of its refusal, spoken answer and content parts that are not
// text (a thinking part joined from its deltas), as chatMessageBlocks
// reads the same answer not streamed and the message the app sends back;
// ok is false when the message is tool calls alone.
func (s *Stream) chatBlock() (b events.Block, ok bool) {
	m := chatMessage{Role: "assistant", Refusal: s.chatRefusal.String()}
	if s.chatSaid.audio != "" {
		m.Audio = &struct {
			ID string `json:"id"`
		}{s.chatSaid.audio}
	}
	var d partsDigest
	addChatMeta(&d, &m)
	for _, p := range s.chatSaid.parts.all() {
		// As readContent digests the message's content parts: the
		// answer not streamed, and the message an app sends back.
		var id partIdentity
		if json.Unmarshal(p, &id) == nil {
			d.add(id, p)
		}
	}
	parts := d.sum()
	if s.chatText.Len() == 0 && parts == "" && len(s.chatCalls) > 0 {
		return events.Block{}, false
	}
	return withThought(withParts(events.Block{Kind: events.KindLLMText, Text: s.chatText.String()}, parts), d.thought()), true
}

// chatStreamed is the streamed first choice's MetaStreamed: its
// annotations, its refusal, the reasoning an OpenAI-compatible server
// streamed (under the name it gave it) and its spoken answer's ID and
// transcript, as a
// response that is not streamed writes them beside its content (the
// audio's data left out: the provider keeps it by its ID). The refusal
// and the transcript are what the app shows for the answer, and the
// block's digest alone would keep nothing of them.
func (s *Stream) chatStreamed() string {
	if s.chatRefusal.Len() == 0 && s.chatSaid.empty() {
		return s.chatAnnotations.object("annotations")
	}
	m := map[string]json.RawMessage{}
	if a := s.chatAnnotations.array(); a != nil {
		m["annotations"] = a
	}
	if s.chatRefusal.Len() > 0 {
		m["refusal"], _ = json.Marshal(s.chatRefusal.String())
	}
	s.chatSaid.members(m)
	b, err := json.Marshal(m)
	if err != nil {
		return ""
	}
	return string(b)
}

// Complete reports whether the stream delivered its whole answer: its
// final event was seen (Done) without an error, or, for a Chat Completions
// stream that ended without "data: [DONE]" (some OpenAI-compatible servers
// leave it out, and the SDKs end the stream at its end all the same),
// every choice it sent has its finish_reason. Ask it once the stream has
// ended: a choice may yet be followed by another.
func (s *Stream) Complete() bool {
	if s.done || s.api != ChatCompletions || s.err != "" || s.out.StopReason == "" {
		return s.done
	}
	for _, o := range s.others {
		if o.finish == "" {
			return false
		}
	}
	return true
}
