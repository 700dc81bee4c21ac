package calls

import (
	"encoding/json"
	"strings"
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

// TestStreamedThinkingPartsAreJoined: consecutive thinking parts, one a
// delta, are one part, their texts one text, as a response that is not
// streamed writes the thinking; a part of another kind, or a thinking
// part written otherwise, begins another.
func TestStreamedThinkingPartsAreJoined(t *testing.T) {
	for _, tc := range []struct {
		name   string
		deltas []string
		want   string
	}{
		{"tokens", []string{
			`[{"type":"thinking","thinking":[{"type":"text","text":"Let "}]}]`,
			`[{"type":"thinking","thinking":[{"type":"text","text":"me "}]},{"type":"thinking","thinking":[{"type":"text","text":"see."}]}]`,
		}, `[{"type":"thinking","thinking":[{"type":"text","text":"Let me see."}]}]`},
		{"another part between", []string{
			`[{"type":"thinking","thinking":[{"type":"text","text":"a"}]}]`,
			`[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]`,
			`[{"type":"thinking","thinking":[{"type":"text","text":"b"}]}]`,
		}, `[{"type":"thinking","thinking":[{"type":"text","text":"a"}]},{"type":"image_url","image_url":{"url":"https://x/y.png"}},{"type":"thinking","thinking":[{"type":"text","text":"b"}]}]`},
		{"other members", []string{
			`[{"type":"thinking","thinking":[{"type":"text","text":"a"}]}]`,
			`[{"type":"thinking","closed":true,"thinking":[{"type":"text","text":"b"}]}]`,
		}, `[{"type":"thinking","thinking":[{"type":"text","text":"a"}]},{"type":"thinking","closed":true,"thinking":[{"type":"text","text":"b"}]}]`},
		{"a part in the thinking that is not text", []string{
			`[{"type":"thinking","thinking":[{"type":"text","text":"a"}]}]`,
			`[{"type":"thinking","thinking":[{"type":"reference","reference_ids":[1]}]}]`,
			`[{"type":"thinking","thinking":[{"type":"text","text":"b"}]}]`,
		}, `[{"type":"thinking","thinking":[{"type":"text","text":"a"},{"type":"reference","reference_ids":[1]},{"type":"text","text":"b"}]}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var said choiceSaid
			var text strings.Builder
			for _, d := range tc.deltas {
				said.content(&text, json.RawMessage(d))
			}
			assert.JSONEq(t, tc.want, string(said.parts.array()))
		})
	}
}

// TestStreamedThinkingReadMidStream: the parts read before the stream
// ends (a call that fails part-way) leave the thinking still streaming
// to be joined with what comes after.
func TestStreamedThinkingReadMidStream(t *testing.T) {
	var said choiceSaid
	var text strings.Builder
	said.content(&text, json.RawMessage(`[{"type":"thinking","thinking":[{"type":"text","text":"a"}]}]`))
	assert.JSONEq(t, `[{"type":"thinking","thinking":[{"type":"text","text":"a"}]}]`, string(said.parts.array()))
	said.content(&text, json.RawMessage(`[{"type":"thinking","thinking":[{"type":"text","text":"b"}]}]`))
	assert.JSONEq(t, `[{"type":"thinking","thinking":[{"type":"text","text":"ab"}]}]`, string(said.parts.array()))
}
