package gateway_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// screenshot is a content part holding an image of n random-looking
// bytes, as a computer-use agent sends one each turn.
func screenshot(n int) string {
	img := make([]byte, 300)
	for i := range img {
		img[i] = byte(n*31 + i*7)
	}
	return `{"type":"text","text":"Current screen:"},{"type":"image_url","image_url":{"url":"data:image/png;base64,` + base64.StdEncoding.EncodeToString(img) + `"}}`
}

// TestChatsDifferingOnlyInImagesAreNotMerged: two chats whose texts are
// equal (an agent sending "Current screen:" and a screenshot each turn,
// answered alike) but whose images differ are two conversations. The
// gateway threaded by text alone: the first chat's second call went into
// the second chat's conversation, recorded there as an edit of its
// history.
func TestChatsDifferingOnlyInImagesAreNotMerged(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("Done."))
	r := newRig(t, up.URL, "")
	headers := map[string]string{"Turnlog-Token": token}
	send := func(shots ...int) string {
		t.Helper()
		msgs := `{"role":"system","content":"You operate the computer."}`
		for i, s := range shots {
			if i > 0 {
				msgs += `,{"role":"assistant","content":"Done."}`
			}
			msgs += `,{"role":"user","content":[` + screenshot(s) + `]}`
		}
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", headers, `{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	a1 := send(1)
	b1 := send(2)
	require.NotEqual(t, a1, b1)
	assert.Equal(t, a1, send(1, 3), "chat A's second call continues chat A, whose screenshot it re-sends")
	assert.Equal(t, b1, send(2, 4), "chat B's second call continues chat B")
	for _, c := range []string{a1, b1} {
		verify(t, r.log, c)
		assert.Empty(t, checkRules(t, r.log, c), "conversation %s", c)
	}
	// The same screenshots again are the same chat: content, not IDs.
	assert.Equal(t, a1, send(1, 3, 5))
}

// searchAnswer is the content of Claude's nth answer in the server tool
// tests: a web search, its results, and the same words each time, citing
// the result.
func searchAnswer(n int64) string {
	return fmt.Sprintf(`[{"type":"server_tool_use","id":"srvtoolu_%d","name":"web_search","input":{"query":"weather paris"}},`+
		`{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%d","content":[{"type":"web_search_result","url":"https://example.com/w","title":"Weather","encrypted_content":"Eq%d","page_age":null}]},`+
		`{"type":"text","text":"It is sunny in Paris.","citations":[%s]}]`, n, n, n, searchCitation(n))
}

// searchCitation is the citation of Claude's nth answer's text.
func searchCitation(n int64) string {
	return fmt.Sprintf(`{"type":"web_search_result_location","cited_text":"Sunny, 24 degrees.","url":"https://example.com/w","title":"Weather","encrypted_index":"Ix%d"}`, n)
}

// searchStream is searchAnswer as Claude streams it.
func searchStream(w io.Writer, n int64) {
	ev := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ, data) }
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_%d","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":1}}}`, n))
	ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_%d","name":"web_search","input":{}}}`, n))
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\": \"weather paris\"}"}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("content_block_start", fmt.Sprintf(`{"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_%d","content":[{"type":"web_search_result","url":"https://example.com/w","title":"Weather","encrypted_content":"Eq%d","page_age":null}]}}`, n, n))
	ev("content_block_stop", `{"type":"content_block_stop","index":1}`)
	ev("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"text","text":""}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":`+searchCitation(n)+`}}`)
	ev("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"It is sunny in Paris."}}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":2}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":4}}`)
	ev("message_stop", `{"type":"message_stop"}`)
}

// newSearchUpstream is a stand-in for Claude answering every call with a
// web search and the same words (searchAnswer), streamed when asked.
func newSearchUpstream(t *testing.T) *httptest.Server {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		i := n.Add(1)
		if bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "text/event-stream")
			searchStream(w, i)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"c","content":%s,"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}`, i, searchAnswer(i))
	}))
	t.Cleanup(up.Close)
	return up
}

// TestServerToolBlocksAnsweredAlikeAreNotDuplicates: Claude's server
// tools (web search) give blocks whose text is empty and whose content is
// their own (the tool's call ID, its results). Two turns that searched
// and answered the same words are two exchanges, not a history sent
// twice; replay --check reported duplicate_blocks for them. Streamed or
// not, the answer the app sends back continues the conversation.
func TestServerToolBlocksAnsweredAlikeAreNotDuplicates(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			up := newSearchUpstream(t)
			r := newRig(t, "", up.URL)
			headers := map[string]string{"Turnlog-Token": token, "Anthropic-Version": "2023-06-01"}
			msgs := []json.RawMessage{json.RawMessage(`{"role":"user","content":"weather in paris?"}`)}
			var conv string
			for i, next := range []string{"and tomorrow?", "thanks", ""} {
				body, _ := json.Marshal(map[string]any{"model": "c", "max_tokens": 100, "messages": msgs, "stream": stream,
					"tools": []map[string]any{{"type": "web_search_20250305", "name": "web_search"}}})
				resp, _ := postOK(t, r.gw.URL+"/v1/messages", headers, string(body))
				if i == 0 {
					conv = resp.Header.Get("Turnlog-Conversation")
				}
				require.Equal(t, conv, resp.Header.Get("Turnlog-Conversation"), "call %d continues the conversation", i+1)
				msgs = append(msgs, json.RawMessage(`{"role":"assistant","content":`+searchAnswer(int64(i+1))+`}`))
				if next != "" {
					msgs = append(msgs, json.RawMessage(`{"role":"user","content":`+jsonString(next)+`}`))
				}
			}
			verify(t, r.log, conv)
			assert.Empty(t, checkRules(t, r.log, conv))
		})
	}
}

func jsonString(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestAnthropicSDKServerToolConversation: the official SDK sends back the
// server tool's blocks as it read them (streamed: as finalMessage()
// accumulated them); the three calls are one conversation, proved and
// without findings, and the bytes pass unchanged. Each call's recorded
// output holds the search and the text's citations as the SDK got them:
// a streamed one's record kept neither before (no MetaStreamed).
func TestAnthropicSDKServerToolConversation(t *testing.T) {
	for _, stream := range []string{"", "1"} {
		t.Run("stream="+stream, func(t *testing.T) {
			r := newRig(t, "", newSearchUpstream(t).URL, func(c *gateway.Config) { c.AnthropicKey = "sk-ant-provider" })
			res := runSDK(t, "messages_search.js", "BASE_URL="+r.gw.URL, "API_KEY="+token, "STREAM="+stream)
			assert.Equal(t, []string{"It is sunny in Paris.", "It is sunny in Paris.", "It is sunny in Paris."}, res.Texts)
			sent, received, _ := r.wire.snapshot()
			assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
			assert.Equal(t, res.Received, received, "response bodies byte for byte")
			require.Len(t, res.Conversations, 3)
			for _, c := range res.Conversations {
				assert.Equal(t, res.Conversations[0], c, "one conversation")
			}
			verify(t, r.log, res.Conversations[0])
			assert.Empty(t, checkRules(t, r.log, res.Conversations[0]))

			view, err := replay.Calls(t.Context(), r.log, res.Conversations[0], replay.Page{})
			require.NoError(t, err)
			require.Len(t, view.Calls, 3)
			require.Len(t, res.Contents, 3)
			for i, c := range view.Calls {
				var got []map[string]json.RawMessage
				require.NoError(t, json.Unmarshal(res.Contents[i], &got))
				require.Len(t, got, 3, "call %d: the SDK's content", i+1)
				require.Len(t, c.Output, 3, "call %d: the recorded output", i+1)
				if stream == "" {
					var item struct {
						Content json.RawMessage `json:"content"`
					}
					require.NoError(t, json.Unmarshal([]byte(c.Output[0].Meta[calls.MetaItem]), &item), "call %d", i+1)
					assert.JSONEq(t, string(res.Contents[i]), string(item.Content), "call %d: the answer's JSON", i+1)
					continue
				}
				for j := range 2 {
					want, _ := json.Marshal(got[j])
					assert.JSONEq(t, string(want), c.Output[j].Meta[calls.MetaStreamed], "call %d, block %d: as the SDK assembled it", i+1, j)
				}
				assert.JSONEq(t, `{"citations":`+string(got[2]["citations"])+`}`, c.Output[2].Meta[calls.MetaStreamed], "call %d: the text's citations", i+1)
			}
		})
	}
}

// TestGroupChatParticipantsAreNotMerged: chat messages name their
// participant ("name"), which the model reads. Two rooms where alice and
// bob each said "hi" are two conversations; the gateway merged alice's
// into bob's.
func TestGroupChatParticipantsAreNotMerged(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("Welcome."))
	r := newRig(t, up.URL, "")
	send := func(who string, turns int) string {
		t.Helper()
		msgs := `{"role":"system","content":"You moderate a chat room."}`
		for i := range turns {
			if i > 0 {
				msgs += `,{"role":"assistant","content":"Welcome."}`
			}
			msgs += fmt.Sprintf(`,{"role":"user","name":%q,"content":"hi %d"}`, who, i)
		}
		resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	alice, bob := send("alice", 1), send("bob", 1)
	assert.Equal(t, alice, send("alice", 2), "alice's second call continues alice's room")
	assert.Equal(t, bob, send("bob", 2), "bob's second call continues bob's room")
	for _, c := range []string{alice, bob} {
		verify(t, r.log, c)
		assert.Empty(t, checkRules(t, r.log, c), "conversation %s", c)
	}
}

// TestRefusalContinues: a model that refuses writes its refusal in
// "refusal" (streamed: in refusal deltas); the app sends the message back
// as the SDK assembles it ({"content": null, "refusal": "..."}). The
// record's output must be that message, or the next call reads as a
// rewritten history (streamed, it started a new conversation).
func TestRefusalContinues(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":null,"refusal":""}`, `{"refusal":"I can't "}`, `{"refusal":"help with that."}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			r := newRig(t, up.URL, "")
			headers := map[string]string{"Turnlog-Token": token}
			call := func(msgs string) string {
				t.Helper()
				resp, body := post(t, r.gw.URL+"/v1/chat/completions", headers, fmt.Sprintf(`{"model":"m","stream":%v,"messages":[%s]}`, stream, msgs))
				require.Equal(t, 200, resp.StatusCode, "%s", body)
				return resp.Header.Get("Turnlog-Conversation")
			}
			msgs := `{"role":"user","content":"do something bad"}`
			conv := call(msgs)
			msgs += `,{"role":"assistant","content":null,"refusal":"I can't help with that."},{"role":"user","content":"ok, something else"}`
			assert.Equal(t, conv, call(msgs))
			verify(t, r.log, conv)
			assert.Empty(t, checkRules(t, r.log, conv))
		})
	}
}

// TestSpokenAnswerContinues: an audio model's answer is its audio (ID,
// data, transcript), and the app sends back only its ID, as OpenAI
// documents ({"role": "assistant", "audio": {"id": ...}}); streamed, the
// ID comes in an audio delta. The next call continues the conversation
// without findings, and two spoken answers are not one.
func TestSpokenAnswerContinues(t *testing.T) {
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		i := n.Add(1)
		if !bytes.Contains(body, []byte(`"stream":true`)) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"audio":{"id":"audio_%d","data":"UklGRg==","expires_at":1,"transcript":"Hello."}},"finish_reason":"stop"}]}`, i)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":null}`, fmt.Sprintf(`{"audio":{"id":"audio_%d","transcript":"Hello."}}`, i), `{"audio":{"data":"UklGRg=="}}`, `{"audio":{"expires_at":1}}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%v", stream), func(t *testing.T) {
			n.Store(0)
			r := newRig(t, up.URL, "")
			call := func(msgs string) string {
				t.Helper()
				resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
					fmt.Sprintf(`{"model":"m","modalities":["text","audio"],"stream":%v,"messages":[%s]}`, stream, msgs))
				require.Equal(t, 200, resp.StatusCode, "%s", body)
				return resp.Header.Get("Turnlog-Conversation")
			}
			msgs := `{"role":"user","content":"say hello"}`
			conv := call(msgs)
			for i := 1; i <= 2; i++ {
				msgs += fmt.Sprintf(`,{"role":"assistant","audio":{"id":"audio_%d"}},{"role":"user","content":"again"}`, i)
				assert.Equal(t, conv, call(msgs), "call %d", i+1)
			}
			verify(t, r.log, conv)
			assert.Empty(t, checkRules(t, r.log, conv))
		})
	}
}

// TestEndUsersAreNotMerged: two end users of one app whose chats begin
// alike ("hi", and the model's same greeting) were one state: the first
// user's second call continued the conversation recorded last, the other
// user's, and the other's second call then forked it. An app that names
// its end user (safety_identifier or user; Anthropic's metadata.user_id)
// now keeps each user's chat a conversation of its own; one that names
// none is threaded as before.
func TestEndUsersAreNotMerged(t *testing.T) {
	for _, tc := range []struct {
		name  string
		field func(user string) string
	}{
		{"user", func(u string) string { return `"user":"` + u + `",` }},
		{"safety_identifier", func(u string) string { return `"safety_identifier":"` + u + `",` }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := newFixedUpstream(t, chatAnswer("Hello! How can I help?"))
			r := newRig(t, up.URL, "")
			send := func(user string, msgs string) string {
				t.Helper()
				resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m",`+tc.field(user)+`"messages":[`+msgs+`]}`)
				require.Equal(t, 200, resp.StatusCode, "%s", body)
				return resp.Header.Get("Turnlog-Conversation")
			}
			first := `{"role":"user","content":"hi"}`
			ada, bob := send("ada", first), send("bob", first)
			again := first + `,{"role":"assistant","content":"Hello! How can I help?"}`
			assert.Equal(t, ada, send("ada", again+`,{"role":"user","content":"my invoice"}`), "ada's second call continues ada's chat")
			assert.Equal(t, bob, send("bob", again+`,{"role":"user","content":"my password"}`), "bob's second call continues bob's chat")
			for _, c := range []string{ada, bob} {
				verify(t, r.log, c)
				assert.Empty(t, checkRules(t, r.log, c), "conversation %s", c)
			}
			started, _, _ := inferences(t, r, ada)
			require.Len(t, started, 2)
			assert.Equal(t, "ada", started[1].Gateway["scope"], "the record says whose states the call was threaded by")
		})
	}
}

// TestAnthropicEndUsersAreNotMerged: as TestEndUsersAreNotMerged, with the
// Messages API's metadata.user_id.
func TestAnthropicEndUsersAreNotMerged(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":1}}`)
	r := newRig(t, "", up.URL)
	send := func(user, msgs string) string {
		t.Helper()
		resp, body := post(t, r.gw.URL+"/v1/messages", map[string]string{"Turnlog-Token": token, "Anthropic-Version": "2023-06-01"},
			`{"model":"c","max_tokens":10,"metadata":{"user_id":"`+user+`"},"messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	first := `{"role":"user","content":"hi"}`
	ada, bob := send("ada", first), send("bob", first)
	again := first + `,{"role":"assistant","content":"Hello!"}`
	assert.Equal(t, ada, send("ada", again+`,{"role":"user","content":"one"}`))
	assert.Equal(t, bob, send("bob", again+`,{"role":"user","content":"two"}`))
}
