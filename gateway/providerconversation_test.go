package gateway_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/sdktest"
	"github.com/turnlog/turnlog/replay"
)

// conversationsUpstream is a stand-in of OpenAI's Conversations API with
// the Responses API on it: POST /v1/conversations creates a conversation
// (with its initial items), and a response naming one (`conversation`, as
// an ID or as {"id": ...}) reads that conversation's items before its
// input, and adds its input and output to it. It answers the last user
// message it read, and refuses a call naming a conversation it does not
// hold, as the API does, and a call whose input begins with "!" (neither
// adds anything to a conversation).
type conversationsUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	convs map[string][]string // conversation → texts of its items
	ids   map[string][]string // conversation → IDs of its items ("" for those it did not name)
	n     int
}

// items serves POST /v1/conversations/{id}/items (adds them, answers
// them with their IDs) and DELETE /v1/conversations/{id}/items/{item_id}.
// The lock is held.
func (u *conversationsUpstream) items(w http.ResponseWriter, r *http.Request, rest string, raw []byte) {
	parts := strings.Split(rest, "/")
	texts, ok := u.convs[parts[0]]
	if !ok || len(parts) < 2 || parts[1] != "items" {
		w.WriteHeader(404)
		fmt.Fprintf(w, `{"error":{"message":"Conversation with id '%s' not found.","type":"invalid_request_error"}}`, parts[0])
		return
	}
	conv := parts[0]
	if r.Method == http.MethodDelete && len(parts) == 3 {
		for i, id := range u.ids[conv] {
			if id == parts[2] {
				u.convs[conv] = append(texts[:i:i], texts[i+1:]...)
				u.ids[conv] = append(u.ids[conv][:i:i], u.ids[conv][i+1:]...)
				fmt.Fprintf(w, `{"id":%q,"object":"conversation","created_at":1,"metadata":{}}`, conv)
				return
			}
		}
		w.WriteHeader(404)
		fmt.Fprintf(w, `{"error":{"message":"Item with id '%s' not found.","type":"invalid_request_error"}}`, parts[2])
		return
	}
	var body struct {
		Items []struct{ Content string } `json:"items"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Items) == 0 {
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"items: expected a non-empty list","type":"invalid_request_error"}}`)
		return
	}
	var data []string
	for _, it := range body.Items {
		u.n++
		id := fmt.Sprintf("msg_item%d", u.n)
		u.convs[conv] = append(u.convs[conv], it.Content)
		u.ids[conv] = append(u.ids[conv], id)
		data = append(data, fmt.Sprintf(`{"type":"message","id":%q,"status":"completed","role":"user","content":[{"type":"input_text","text":%q}]}`, id, it.Content))
	}
	fmt.Fprintf(w, `{"object":"list","data":[%s],"first_id":"x","last_id":"y","has_more":false}`, strings.Join(data, ","))
}

func newConversationsUpstream(t *testing.T) *conversationsUpstream {
	u := &conversationsUpstream{convs: map[string][]string{}, ids: map[string][]string{}}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *conversationsUpstream) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	u.mu.Lock()
	defer u.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1/conversations/"); ok {
		u.items(w, r, rest, raw)
		return
	}
	switch r.URL.Path {
	case "/v1/conversations":
		var body struct {
			Items []struct{ Content string } `json:"items"`
		}
		_ = json.Unmarshal(raw, &body)
		u.n++
		id := fmt.Sprintf("conv_%04d", u.n)
		u.convs[id] = []string{}
		for _, it := range body.Items {
			u.convs[id] = append(u.convs[id], it.Content)
			u.ids[id] = append(u.ids[id], "")
		}
		fmt.Fprintf(w, `{"id":%q,"object":"conversation","created_at":1,"metadata":{}}`, id)
	case "/v1/responses":
		var body struct {
			Conversation json.RawMessage `json:"conversation"`
			Input        json.RawMessage `json:"input"`
			Stream       bool            `json:"stream"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			w.WriteHeader(400)
			fmt.Fprintf(w, `{"error":{"message":%q,"type":"invalid_request_error"}}`, err.Error())
			return
		}
		var id string
		if json.Unmarshal(body.Conversation, &id) != nil {
			var obj struct{ ID string }
			_ = json.Unmarshal(body.Conversation, &obj)
			id = obj.ID
		}
		items, ok := u.convs[id]
		if !ok {
			w.WriteHeader(404)
			fmt.Fprintf(w, `{"error":{"message":"Conversation with id '%s' not found.","type":"invalid_request_error"}}`, id)
			return
		}
		var input string
		if json.Unmarshal(body.Input, &input) != nil {
			var list []struct{ Content string }
			_ = json.Unmarshal(body.Input, &list)
			for _, it := range list {
				input = it.Content
			}
		}
		if strings.HasPrefix(input, "!") {
			// A call the provider refuses adds nothing to the conversation.
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"message":"Invalid input.","type":"invalid_request_error"}}`)
			return
		}
		u.n++
		answer := fmt.Sprintf("answer to %q after %d items", input, len(items))
		u.convs[id] = append(items, input, answer)
		u.ids[id] = append(u.ids[id], "", "")
		msg := fmt.Sprintf(`{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, u.n, answer)
		resp := fmt.Sprintf(`{"id":"resp_%d","object":"response","created_at":1,"status":"completed","model":"m","conversation":{"id":%q},"output":[%s],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`, u.n, id, msg)
		if !body.Stream {
			io.WriteString(w, resp)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"output_index\":0,\"item\":%s}\n\n", msg)
		fmt.Fprintf(w, "event: response.completed\ndata: {\"type\":\"response.completed\",\"response\":%s}\n\n", resp)
	default:
		w.WriteHeader(404)
	}
}

// TestResponsesConversationIsOneConversation: an app that keeps its
// history on OpenAI's side with the Conversations API sends each call's
// new items only, naming the conversation (`conversation`). Every such
// call started a conversation of its own in turnlog (its input holds no
// earlier output, so threading by content found nothing): a ten-turn chat
// was ten one-call conversations. The calls of one provider conversation
// are one turnlog conversation, by the same ID, whichever way the app
// writes it; another provider conversation is another.
func TestResponsesConversationIsOneConversation(t *testing.T) {
	up := newConversationsUpstream(t)
	r := newRig(t, up.URL, "")
	hdr := map[string]string{"Turnlog-Token": token}
	create := func() string {
		t.Helper()
		_, out := postOK(t, r.gw.URL+"/v1/conversations", hdr, `{"items":[]}`)
		var c struct{ ID string }
		require.NoError(t, json.Unmarshal(out, &c))
		return c.ID
	}
	call := func(conv, body string) string {
		t.Helper()
		resp, _ := postOK(t, r.gw.URL+"/v1/responses", hdr, body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	a, b := create(), create()
	got := []string{
		call(a, `{"model":"m","instructions":"Be brief.","conversation":"`+a+`","input":"first question"}`),
		call(b, `{"model":"m","conversation":"`+b+`","input":"other chat"}`),
		call(a, `{"model":"m","instructions":"Be brief.","conversation":{"id":"`+a+`"},"input":[{"role":"user","content":"second question"}]}`),
		call(a, `{"model":"m","instructions":"Be brief.","conversation":"`+a+`","stream":true,"input":"third question"}`),
	}
	assert.Equal(t, []string{a, b, a, a}, got, "each provider conversation is one turnlog conversation, of its ID")

	turn, err := r.log.Load(t.Context(), a)
	require.NoError(t, err)
	var texts []string
	for _, bl := range turn.Blocks {
		texts = append(texts, bl.Text)
	}
	assert.Equal(t, []string{"Be brief.",
		"first question", `answer to "first question" after 0 items`,
		"second question", `answer to "second question" after 2 items`,
		"third question", `answer to "third question" after 4 items`}, texts,
		"the conversation holds what the provider's holds, the instructions once")
	v := verify(t, r.log, a)
	assert.Equal(t, 3, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, a))
	var text strings.Builder
	for e, err := range replay.Entries(t.Context(), r.log, a) {
		require.NoError(t, err)
		if e.Inference != nil {
			require.NoError(t, e.WriteText(&text))
		}
	}
	assert.Contains(t, text.String(), `continues the provider's conversation "`+a+`"`)
}

// TestRefusedContinuationLeavesNoItems: a call that continues a history
// the provider holds (a conversation, or a previous response) and that the
// provider refuses adds nothing to that history. Its items stayed in the
// recorded conversation all the same, so the conversation's history showed
// "!second" before "second" where the model read only "second" (the
// provider's "after 2 items"), and the console and export with it.
func TestRefusedContinuationLeavesNoItems(t *testing.T) {
	up := newConversationsUpstream(t)
	r := newRig(t, up.URL, "")
	hdr := map[string]string{"Turnlog-Token": token}
	_, out := postOK(t, r.gw.URL+"/v1/conversations", hdr, `{}`)
	var c struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &c))
	for _, tc := range []struct {
		input  string
		status int
	}{{"first", 200}, {"!second", 400}, {"second", 200}} {
		resp, out := post(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","instructions":"Be brief.","conversation":"`+c.ID+`","input":"`+tc.input+`"}`)
		require.Equal(t, tc.status, resp.StatusCode, "%s", out)
	}
	turn, err := r.log.Load(t.Context(), c.ID)
	require.NoError(t, err)
	var texts []string
	for _, bl := range turn.Blocks {
		texts = append(texts, bl.Text)
	}
	assert.Equal(t, []string{"Be brief.", "first", `answer to "first" after 0 items`, "second", `answer to "second" after 2 items`}, texts)
	v := verify(t, r.log, c.ID)
	assert.Equal(t, 3, v.Inferences, "the refused call is proven too: its input was what it sent")
	assert.Empty(t, checkRules(t, r.log, c.ID))
}

// TestOpenAISDKConversation: the official openai package creates a
// conversation with a developer message in it, adds a note to it and makes
// three calls in it, one streamed; they are one turnlog conversation, the
// provider's ID, holding what the provider's holds, the developer message
// the prompt each call read; both directions pass byte for byte.
func TestOpenAISDKConversation(t *testing.T) {
	up := newConversationsUpstream(t)
	r := newRig(t, up.URL, "", func(c *gateway.Config) { c.OpenAIKey = "sk-provider-secret" })
	prefix := sdktest.Install(t)
	out := sdktest.Run(t, prefix, filepath.Join("testdata", "responses_conversation.js"), "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	var res struct {
		sdkResult
		Conversation string `json:"conversation"`
	}
	require.NoError(t, json.Unmarshal(out, &res), "script output: %s", out)
	assert.Equal(t, []string{`answer to "first question" after 1 items`, `answer to "second question" after 4 items`, `answer to "third question" after 6 items`}, res.Texts)
	sent, received, _ := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
	assert.Equal(t, res.Received, received, "response bodies byte for byte")
	require.Len(t, res.Conversations, 5)
	for _, conv := range res.Conversations {
		assert.Equal(t, res.Conversation, conv)
	}
	assert.Equal(t, []string{"Be terse.", "first question", `answer to "first question" after 1 items`, "a note",
		"second question", `answer to "second question" after 4 items`, "third question", `answer to "third question" after 6 items`},
		blockTexts(t, r.log, res.Conversation))
	turn, err := r.log.Load(t.Context(), res.Conversation)
	require.NoError(t, err)
	for _, e := range conversationEvents(t, r.log, res.Conversation) {
		if st, ok := e.Payload.(events.InferenceStarted); ok {
			assert.Equal(t, turn.Blocks[0].ID, st.SystemPromptID, "the developer message is the prompt the model read")
		}
	}
	v := verify(t, r.log, res.Conversation)
	assert.Equal(t, 3, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, res.Conversation))
}

// TestConversationItemsAreRecorded: items an app puts into an OpenAI
// conversation beside its model calls (when it creates it, and with
// POST .../items) are what the model reads before each call's input, a
// developer message among them. They passed through unrecorded: the record
// of a call showed a history without them and no system prompt, where the
// model read one. They are now recorded where the provider puts them,
// marked with the request that put them, before the app gets the answer;
// a deleted item is removed; the calls still verify.
func TestConversationItemsAreRecorded(t *testing.T) {
	up := newConversationsUpstream(t)
	m, logs, watched := watchedGateway()
	r := newRig(t, up.URL, "", watched)
	hdr := map[string]string{"Turnlog-Token": token}
	resp, out := post(t, r.gw.URL+"/v1/conversations", hdr,
		`{"items":[{"type":"message","role":"developer","content":"You are terse."},{"role":"user","content":"I am Ada."}],"metadata":{"app":"x"}}`)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
	var c struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &c))
	assert.Equal(t, c.ID, resp.Header.Get("Turnlog-Conversation"))
	call := func(input string) {
		t.Helper()
		resp, _ := postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","conversation":"`+c.ID+`","input":"`+input+`"}`)
		require.Equal(t, c.ID, resp.Header.Get("Turnlog-Conversation"))
	}
	call("first question")
	resp, out = postOK(t, r.gw.URL+"/v1/conversations/"+c.ID+"/items", hdr, `{"items":[{"role":"user","content":"a note"},{"role":"user","content":"another note"}]}`)
	ids := calls.ResponseItemIDs(out)
	require.Len(t, ids, 2)
	del, out := tokenRequest(t, http.MethodDelete, r.gw.URL+"/v1/conversations/"+c.ID+"/items/"+ids[0])
	require.Equal(t, 200, del.StatusCode, "%s", out)
	call("second question")

	// The record holds what the provider's conversation holds, in its
	// order: the answers' item counts are the provider's.
	assert.Equal(t, []string{"You are terse.", "I am Ada.", "first question", `answer to "first question" after 2 items`,
		"another note", "second question", `answer to "second question" after 5 items`}, blockTexts(t, r.log, c.ID))
	turn, err := r.log.Load(t.Context(), c.ID)
	require.NoError(t, err)
	assert.Equal(t, "POST /v1/conversations", turn.Blocks[0].Meta[calls.MetaAddedBy])
	assert.Equal(t, "POST /v1/conversations/"+c.ID+"/items", turn.Blocks[4].Meta[calls.MetaAddedBy])
	assert.Equal(t, ids[1], turn.Blocks[4].Meta[calls.MetaItemID])
	var removed []string
	var prompts []string
	for _, e := range conversationEvents(t, r.log, c.ID) {
		switch p := e.Payload.(type) {
		case events.BlocksRemoved:
			removed = append(removed, p.Reason)
		case events.InferenceStarted:
			prompts = append(prompts, p.SystemPromptID)
		}
	}
	require.Len(t, removed, 1)
	assert.Contains(t, removed[0], "the app deleted item "+ids[0])
	assert.Equal(t, []string{turn.Blocks[0].ID, turn.Blocks[0].ID}, prompts, "each call's model read the seeded developer message")
	v := verify(t, r.log, c.ID)
	assert.Equal(t, 2, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, c.ID))
	metrics := scrape(t, m)
	assert.Contains(t, metrics, `turnlog_gateway_provider_writes_total{kind="created",outcome="recorded"} 1`)
	assert.Contains(t, metrics, `turnlog_gateway_provider_writes_total{kind="added",outcome="recorded"} 1`)
	assert.Contains(t, metrics, `turnlog_gateway_provider_writes_total{kind="deleted",outcome="recorded"} 1`)
	assert.NotContains(t, logs.String(), "WARN")
}

// TestInstructionsBesideASeededDeveloperMessage: a call's instructions
// apply to that call, beside the conversation's history, where a developer
// message the app put into the conversation stays. The instructions
// replaced that message in the record (systemprompt.replaced), so the
// record showed one prompt where the model read two, and lost the
// history's. They are now their own block before the history, and the
// check says the model read two system prompts.
func TestInstructionsBesideASeededDeveloperMessage(t *testing.T) {
	up := newConversationsUpstream(t)
	r := newRig(t, up.URL, "")
	hdr := map[string]string{"Turnlog-Token": token}
	_, out := postOK(t, r.gw.URL+"/v1/conversations", hdr, `{"items":[{"role":"developer","content":"You are terse."}]}`)
	var c struct{ ID string }
	require.NoError(t, json.Unmarshal(out, &c))
	for _, q := range []string{"first", "second"} {
		postOK(t, r.gw.URL+"/v1/responses", hdr, `{"model":"m","instructions":"Be brief.","conversation":"`+c.ID+`","input":"`+q+`"}`)
	}
	assert.Equal(t, []string{"Be brief.", "You are terse.", "first", `answer to "first" after 1 items`, "second", `answer to "second" after 3 items`},
		blockTexts(t, r.log, c.ID))
	for _, e := range conversationEvents(t, r.log, c.ID) {
		_, replaced := e.Payload.(events.SystemPromptReplaced)
		assert.False(t, replaced, "nothing replaced the history's developer message")
	}
	verify(t, r.log, c.ID)
}
