package calls

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
