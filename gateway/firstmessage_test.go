package gateway_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// TestFirstMessageIsTheFirstText: a message whose first part is a file or
// an image (Messages' [document, text], Chat Completions' [image_url,
// text], as apps send "here is the file: ...") is recorded as a block
// without text, then the text's block. ls's FIRST MESSAGE showed the
// first block's empty text, so such conversations, named by ULIDs alone,
// could not be told apart. It now shows the first user text.
func TestFirstMessageIsTheFirstText(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}`)
	r := newRig(t, "", up.URL)
	resp, _ := postOK(t, r.gw.URL+"/v1/messages", map[string]string{"Turnlog-Token": token, "anthropic-version": "2023-06-01"},
		`{"model":"c","max_tokens":9,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},`+
			`{"type":"text","text":"what is in this screenshot?"}]}]}`)
	listed := replay.Conversation{ID: resp.Header.Get("Turnlog-Conversation")}
	require.NoError(t, replay.Describe(t.Context(), r.log, &listed))
	assert.Equal(t, "what is in this screenshot?", listed.FirstMessage)
}
