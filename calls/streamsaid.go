package calls

import (
	"encoding/json"
	"strings"
)

// choiceSaid is what a streamed Chat Completions choice says beside its
// content, which the app shows and the block's digest alone would keep
// nothing of: the reasoning an OpenAI-compatible server of a reasoning
// model streams (DeepSeek, vLLM: reasoning_content; Ollama, OpenRouter:
// reasoning), under the name it gave it, and a spoken answer's audio ID
// and transcript. Each choice of a call that asked for several has its
// own.
type choiceSaid struct {
	reasoning     strings.Builder
	reasoningName string // "" when none streamed
	audio         string
	transcript    strings.Builder
	// parts are the content parts that are not text: a server that
	// streams content as a list of parts (Mistral's reasoning models:
	// "thinking") says them beside the answer's text.
	parts streamedParts
}

// content adds a delta's content to text: a string, or a list of parts
// whose text parts' texts are the answer's and whose others are kept
// (parts), as a response that is not streamed has its message's content
// read.
func (c *choiceSaid) content(text *strings.Builder, raw json.RawMessage) {
	if len(raw) == 0 {
		return
	}
	switch raw[0] {
	case '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			text.WriteString(s)
		}
	case '[':
		var parts []json.RawMessage
		if json.Unmarshal(raw, &parts) != nil {
			return
		}
		for _, p := range parts {
			var tp struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if json.Unmarshal(p, &tp) == nil && tp.Type == "text" {
				text.WriteString(tp.Text)
				continue
			}
			c.parts.add(p)
		}
	}
}

// streamedAudio is a delta's audio of a spoken answer.
type streamedAudio struct {
	ID         string `json:"id"`
	Transcript string `json:"transcript"`
}

// add takes what one delta of the choice carries: its reasoning under
// either name, when a string, and its audio.
func (c *choiceSaid) add(reasoningContent, reasoning json.RawMessage, audio *streamedAudio) {
	c.reasoningDelta("reasoning_content", reasoningContent)
	c.reasoningDelta("reasoning", reasoning)
	if audio != nil {
		if audio.ID != "" {
			c.audio = audio.ID
		}
		c.transcript.WriteString(audio.Transcript)
	}
}

// reasoningDelta adds a piece of reasoning that a delta's member name
// holds, when it is a string.
func (c *choiceSaid) reasoningDelta(name string, raw json.RawMessage) {
	var piece string
	if len(raw) == 0 || raw[0] != '"' || json.Unmarshal(raw, &piece) != nil {
		return
	}
	if c.reasoningName == "" {
		c.reasoningName = name
	}
	c.reasoning.WriteString(piece)
}

// empty reports whether the choice said nothing beside its content.
func (c *choiceSaid) empty() bool {
	return c.reasoningName == "" && c.audio == "" && c.transcript.Len() == 0 && c.parts.empty()
}

// members puts what the choice said into m, as a message that is not
// streamed writes it: its reasoning under the name it came by, and
// "audio": {"id", "transcript"} (the audio's data left to the provider,
// which keeps it by its ID).
func (c *choiceSaid) members(m map[string]json.RawMessage) {
	if c.reasoningName != "" {
		m[c.reasoningName], _ = json.Marshal(c.reasoning.String())
	}
	if c.audio != "" || c.transcript.Len() > 0 {
		m["audio"], _ = json.Marshal(streamedAudio{c.audio, c.transcript.String()})
	}
	if a := c.parts.array(); a != nil {
		m["content_parts"] = a
	}
}
