package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// newCompactingUpstream is a stateless Responses API stand-in with
// compaction: /v1/responses answers "answer N", /v1/responses/compact
// answers the input's user messages followed by one compaction item, as
// the API's compacted output is.
func newCompactingUpstream(t *testing.T) *httptest.Server {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		var body struct {
			Input []json.RawMessage `json:"input"`
		}
		_ = json.Unmarshal(raw, &body)
		i := n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/responses":
			fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":1,"status":"completed","model":"m","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"answer %d","annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`, i, i, i)
		case "/v1/responses/compact":
			var out []string
			for _, it := range body.Input {
				var m struct{ Role, Content string }
				if json.Unmarshal(it, &m) == nil && m.Role == "user" {
					out = append(out, fmt.Sprintf(`{"type":"message","role":"user","content":[{"type":"input_text","text":%q}]}`, m.Content))
				}
			}
			out = append(out, fmt.Sprintf(`{"type":"compaction","id":"cmp_%d","encrypted_content":"ENC%d"}`, i, i))
			fmt.Fprintf(w, `{"id":"resp_%d","object":"response.compaction","created_at":1,"output":[%s],"usage":{"input_tokens":50,"output_tokens":10,"total_tokens":60}}`, i, strings.Join(out, ","))
		default:
			w.WriteHeader(404)
		}
	}))
	t.Cleanup(up.Close)
	return up
}

// TestCompactedHistoryContinuesItsConversation: an app that has OpenAI
// compact its history (POST /v1/responses/compact) and goes on from the
// compacted items had the compaction pass through unrecorded and its next
// call start a new conversation: the record lost the moment the history
// was rewritten, and the link between the two halves. The compaction is a
// recorded call: the history it replaced is compacted away in the
// conversation (turn.compacted, the provider's items in its place), the
// next call continues it, and --verify and --check pass.
func TestCompactedHistoryContinuesItsConversation(t *testing.T) {
	up := newCompactingUpstream(t)
	r := newRig(t, up.URL, "")
	hdr := map[string]string{"Turnlog-Token": token}
	call := func(path string, input ...string) (conv string, output []json.RawMessage) {
		t.Helper()
		items := make([]json.RawMessage, len(input))
		for i, s := range input {
			items[i] = json.RawMessage(s)
		}
		b, _ := json.Marshal(map[string]any{"model": "m", "instructions": "Be brief.", "store": false, "input": items})
		resp, out := postOK(t, r.gw.URL+path, hdr, string(b))
		var got struct{ Output []json.RawMessage }
		require.NoError(t, json.Unmarshal(out, &got))
		return resp.Header.Get("Turnlog-Conversation"), got.Output
	}
	u1, u2, u3 := `{"role":"user","content":"one"}`, `{"role":"user","content":"two"}`, `{"role":"user","content":"three"}`
	c1, a1 := call("/v1/responses", u1)
	c2, a2 := call("/v1/responses", u1, string(a1[0]), u2)
	c3, compacted := call("/v1/responses/compact", u1, string(a1[0]), u2, string(a2[0]))
	next := []string{}
	for _, it := range compacted {
		next = append(next, string(it))
	}
	c4, _ := call("/v1/responses", append(next, u3)...)
	assert.Equal(t, []string{c1, c1, c1}, []string{c2, c3, c4}, "one conversation, compaction and all")

	turn, err := r.log.Load(t.Context(), c1)
	require.NoError(t, err)
	var got []string
	for _, b := range turn.Blocks {
		got = append(got, string(b.Kind)+":"+b.Text)
	}
	assert.Equal(t, []string{"system:Be brief.", "user:one", "user:two", "llm_text:", "user:three", "llm_text:answer 4"}, got,
		"the conversation goes on from the compacted history")
	compactions := 0
	for _, e := range conversationEvents(t, r.log, c1) {
		if p, ok := e.Payload.(events.TurnCompacted); ok {
			compactions++
			assert.Len(t, p.Removed, 4, "the history the compaction replaced")
		}
	}
	assert.Equal(t, 1, compactions)
	v := verify(t, r.log, c1)
	assert.Equal(t, 4, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, c1))
	var text strings.Builder
	for e, err := range replay.Entries(t.Context(), r.log, c1) {
		require.NoError(t, err)
		if e.Inference != nil {
			require.NoError(t, e.WriteText(&text))
		}
	}
	assert.Contains(t, text.String(), "a compaction: its output replaces the history")
}

// TestOpenAISDKCompaction: the official openai package's
// responses.compact, and the calls around it, are one conversation;
// bytes pass both ways unchanged.
func TestOpenAISDKCompaction(t *testing.T) {
	up := newCompactingUpstream(t)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" })
	res := runSDK(t, "responses_compact.js", "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	assert.Equal(t, []string{"answer 1", "answer 2", "answer 4"}, res.Texts)
	sent, received, _ := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
	assert.Equal(t, res.Received, received, "response bodies byte for byte")
	require.Len(t, res.Conversations, 4)
	for _, c := range res.Conversations {
		assert.Equal(t, res.Conversations[0], c)
	}
	v := verify(t, r.log, res.Conversations[0])
	assert.Equal(t, 4, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, res.Conversations[0]))
}
