package webconsole_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
)

// TestE2ECitedSources: a call whose answer cites the web shows its
// sources under the output, whether the record keeps them in the
// answer's JSON (not streamed) or beside the streamed blocks. The model
// wrote the links: one that is not http(s) is shown as text, never made a
// link.
func TestE2ECitedSources(t *testing.T) {
	c := startConsole(t)
	openRecordedCall(t, c, "e2e-sources", `{"model":"m","messages":[{"role":"user","content":"Capital of France?"}]}`,
		`{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Paris.","refusal":null,"annotations":[`+
			`{"type":"url_citation","url_citation":{"start_index":0,"end_index":6,"title":"Paris - Wikipedia","url":"https://en.wikipedia.org/wiki/Paris"}},`+
			`{"type":"url_citation","url_citation":{"start_index":0,"end_index":6,"title":"click me","url":"javascript:alert(1)"}}]},"finish_reason":"stop"}]}`)
	links := eval[[]string](c, `[...document.querySelectorAll("#call-output .sources a")].map(a => a.href + " " + a.textContent)`)
	assert.Equal(t, []string{"https://en.wikipedia.org/wiki/Paris Paris - Wikipedia"}, links, "the https source alone is a link")
	assert.Contains(t, eval[string](c, `document.querySelector("#call-output .sources").textContent`), "javascript:alert(1)", "the other is shown as text")
	assert.Equal(t, "Sources cited (2)", eval[string](c, `document.querySelector("#call-output .sources h5").textContent`))
	c.checkClean()

	s := calls.NewStream(calls.Messages, 1<<20)
	s.Write([]byte("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"model\":\"c\",\"usage\":{\"input_tokens\":3}}}\n\n" +
		"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"citations_delta\",\"citation\":{\"type\":\"web_search_result_location\",\"cited_text\":\"Sunny, 24 degrees.\",\"url\":\"https://example.com/w\",\"title\":\"Weather\",\"encrypted_index\":\"Ix\"}}}\n\n" +
		"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"It is sunny.\"}}\n\n" +
		"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n" +
		"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"))
	out, err := s.Output()
	require.NoError(t, err)
	openRecordedOutput(t, c, "e2e-sources-streamed", calls.Messages, `{"model":"c","max_tokens":10,"stream":true,"messages":[{"role":"user","content":"Weather?"}]}`, out)
	assert.Equal(t, []string{"https://example.com/w Weather"}, eval[[]string](c, `[...document.querySelectorAll("#call-output .sources a")].map(a => a.href + " " + a.textContent)`))
	assert.Equal(t, "Sunny, 24 degrees.", eval[string](c, `document.querySelector("#call-output .sources q").textContent`), "what the source says")
	c.checkClean()
}
