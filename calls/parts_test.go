package calls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestKeySeesWhatTheModelReadsBesidesText: blocks of equal text differ by
// what else the model reads (images, a participant's name, a refusal, a
// spoken answer, a server tool's call), and not by what it does not
// (where a cache breakpoint sits, a null member an SDK adds or drops).
func TestKeySeesWhatTheModelReadsBesidesText(t *testing.T) {
	key := func(api API, item string) [32]byte {
		t.Helper()
		bs, err := itemBlocks(api, []byte(item))
		require.NoError(t, err, item)
		require.Len(t, bs, 1, item)
		return Key(&bs[0])
	}
	for _, tc := range []struct {
		name   string
		api    API
		a, b   string
		differ bool
	}{
		{"image", ChatCompletions,
			`{"role":"user","content":[{"type":"text","text":"screen:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`,
			`{"role":"user","content":[{"type":"text","text":"screen:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,BBBB"}}]}`, true},
		{"image written otherwise", ChatCompletions,
			`{"role":"user","content":[{"type":"text","text":"screen:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"},"cache_control":{"type":"ephemeral"}}]}`,
			`{"content":[{"text":"screen:","type":"text"},{"image_url":{"url":"data:image/png;base64,AAAA"},"type":"image_url","extra":null}],"role":"user"}`, false},
		{"participant", ChatCompletions, `{"role":"user","name":"alice","content":"hi"}`, `{"role":"user","name":"bob","content":"hi"}`, true},
		{"assistant named by the client", ChatCompletions, `{"role":"assistant","content":"hi"}`, `{"role":"assistant","name":"model","content":"hi"}`, false},
		{"refusal", ChatCompletions, `{"role":"assistant","content":null,"refusal":"I cannot."}`, `{"role":"assistant","content":null,"refusal":"No."}`, true},
		{"spoken answer", ChatCompletions, `{"role":"assistant","audio":{"id":"audio_1"}}`, `{"role":"assistant","audio":{"id":"audio_2","transcript":"x"}}`, true},
		{"spoken answer sent back", ChatCompletions, `{"role":"assistant","audio":{"id":"audio_1","data":"UklG","transcript":"hello"}}`, `{"role":"assistant","audio":{"id":"audio_1"}}`, false},
		{"text parts only", ChatCompletions, `{"role":"user","content":[{"type":"text","text":"hi"}]}`, `{"role":"user","content":"hi"}`, false},
		{"image block", Messages,
			`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}`,
			`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"BBBB"}}]}`, true},
		{"cache breakpoint moved", Messages,
			`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"},"cache_control":{"type":"ephemeral"}}]}`,
			`{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]}`, false},
		{"input image", Responses,
			`{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,AAAA"}]}`,
			`{"role":"user","content":[{"type":"input_image","image_url":"data:image/png;base64,BBBB"}]}`, true},
		{"built-in tool call", Responses,
			`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`,
			`{"type":"web_search_call","id":"ws_2","status":"completed","action":{"type":"search","query":"q"}}`, true},
		{"built-in tool call sent back", Responses,
			`{"type":"web_search_call","id":"ws_1","status":"completed","action":{"type":"search","query":"q"}}`,
			`{"type":"web_search_call","id":"ws_1"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.differ {
				assert.NotEqual(t, key(tc.api, tc.a), key(tc.api, tc.b))
			} else {
				assert.Equal(t, key(tc.api, tc.a), key(tc.api, tc.b))
			}
		})
	}
}

// TestTextPartsAreThePartsABlockJoins: a system block written as parts
// keeps its text as one (threading's keys are unchanged), and TextParts
// reads the parts back from the item the block keeps: Messages' system as
// text blocks, a system message's content as parts. A block written as
// one text, or whose item no longer joins to its text, has none.
func TestTextPartsAreThePartsABlockJoins(t *testing.T) {
	systemOf := func(api API, body string) events.Block {
		t.Helper()
		req, err := ParseRequest(api, []byte(body))
		require.NoError(t, err, body)
		require.NotEmpty(t, req.Items)
		require.NotEmpty(t, req.Items[0].Blocks)
		b := req.Items[0].Blocks[0]
		require.Equal(t, events.KindSystem, b.Kind, body)
		return b
	}
	b := systemOf(Messages, `{"model":"c","max_tokens":9,"system":[{"type":"text","text":"Be a pirate."},{"type":"text","text":"Be a pirate.","cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":"hi"}]}`)
	assert.Equal(t, "Be a pirate.\nBe a pirate.", b.Text, "one block, its parts' text joined, as before")
	assert.Equal(t, []string{"Be a pirate.", "Be a pirate."}, TextParts(&b))

	b = systemOf(ChatCompletions, `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"a\nb"},{"type":"text","text":"c"}]},{"role":"user","content":"hi"}]}`)
	assert.Equal(t, []string{"a\nb", "c"}, TextParts(&b), "a part may hold lines of its own")

	for _, body := range []string{
		`{"model":"c","max_tokens":9,"system":"Be a pirate.\nBe a pirate.","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"c","max_tokens":9,"system":[{"type":"text","text":"Be a pirate.\nBe a pirate."}],"messages":[{"role":"user","content":"hi"}]}`,
	} {
		b := systemOf(Messages, body)
		assert.Nil(t, TextParts(&b), "one part: %s", body)
	}
	b = systemOf(ChatCompletions, `{"model":"m","messages":[{"role":"system","content":"x\ny"},{"role":"user","content":"hi"}]}`)
	assert.Nil(t, TextParts(&b), "content as one string")

	edited := systemOf(Messages, `{"model":"c","max_tokens":9,"system":[{"type":"text","text":"A"},{"type":"text","text":"A"}],"messages":[{"role":"user","content":"hi"}]}`)
	edited.Text = "A\nB"
	assert.Nil(t, TextParts(&edited), "an item that no longer joins to the block's text is not its parts")
}
