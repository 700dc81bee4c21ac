package calls

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStreamedContentPartsAreRead: an OpenAI-compatible server may stream
// a delta's content as a list of parts (Mistral's reasoning models: a
// "thinking" part, then "text" parts), as its responses that are not
// streamed write a message's content. Such a delta failed to read, and
// the call was recorded without its answer, or failed, though the app got
// the answer. The text parts are now the answer's text, and the other
// parts are kept as they came in gateway.streamed, beside it.
func TestStreamedContentPartsAreRead(t *testing.T) {
	chunk := func(delta, finish string) string {
		return `data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}` + "\n\n"
	}
	stream := chunk(`{"role":"assistant","content":[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]}]}`, "null") +
		chunk(`{"content":[{"type":"text","text":"Hello"}]}`, "null") +
		chunk(`{"content":" there."}`, "null") +
		chunk(`{}`, `"stop"`) + "data: [DONE]\n\n"
	out := feedStream(t, ChatCompletions, stream)
	require.Empty(t, out.Error)
	bs := out.Blocks()
	require.Len(t, bs, 1)
	assert.Equal(t, "Hello there.", bs[0].Text, "the answer's text, from its parts and its strings")
	var streamed map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(bs[0].Meta[MetaStreamed]), &streamed), bs[0].Meta)
	assert.JSONEq(t, `[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]}]`, string(streamed["content_parts"]), "the parts that are not text, as they came")
}
