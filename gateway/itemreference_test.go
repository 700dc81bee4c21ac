package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// referenceCall sends a Responses API call whose input is items (JSON
// values), and returns the conversation it was recorded in.
func referenceCall(t *testing.T, url string, items ...string) string {
	t.Helper()
	input := "["
	for i, it := range items {
		if i > 0 {
			input += ","
		}
		input += it
	}
	body := `{"model":"m","instructions":"be brief","input":` + input + `]}`
	resp, _ := postOK(t, url+"/v1/responses", map[string]string{"Turnlog-Token": token}, body)
	return resp.Header.Get("Turnlog-Conversation")
}

func userItem(text string) string {
	b, _ := json.Marshal(map[string]string{"role": "user", "content": text})
	return string(b)
}

func referenceTo(id string) string { return `{"type":"item_reference","id":"` + id + `"}` }

// blockTexts are the texts of conv's blocks, in order.
func blockTexts(t *testing.T, l *eventlog.Log, conv string) []string {
	t.Helper()
	turn, err := l.Load(t.Context(), conv)
	require.NoError(t, err)
	var out []string
	for _, b := range turn.Blocks {
		out = append(out, b.Text)
	}
	return out
}

// TestItemReferenceIsTheItemItNames: an app on the Responses API with
// store on (the Vercel AI SDK's default) sends the provider's earlier
// output back as {"type": "item_reference", "id": "msg_..."}. Each such
// call used to start a conversation of its own, its replay showing an
// empty block where the model's answer was: the gateway now reads a
// reference as the output item it names, so the chat is one
// conversation, its history the model's answers, and --verify still
// proves the bytes the client sent (the reference, not the text).
func TestItemReferenceIsTheItemItNames(t *testing.T) {
	up := newNumberedResponses(t)
	r := newRig(t, up.URL, "")
	conv := referenceCall(t, r.gw.URL, userItem("first question"))
	second := referenceCall(t, r.gw.URL, userItem("first question"), referenceTo("msg_1"), userItem("second question"))
	require.Equal(t, conv, second, "a reference to the conversation's answer continues it")
	third := referenceCall(t, r.gw.URL, userItem("first question"), referenceTo("msg_1"), userItem("second question"), referenceTo("msg_2"), userItem("third question"))
	require.Equal(t, conv, third)
	assert.Equal(t, []string{"be brief", "first question", "answer 1", "second question", "answer 2", "third question", "answer 3"}, blockTexts(t, r.log, conv))

	var threading []string
	for _, e := range conversationEvents(t, r.log, conv) {
		if st, ok := e.Payload.(events.InferenceStarted); ok {
			threading = append(threading, st.Gateway["threading"])
		}
	}
	assert.Equal(t, []string{calls.ThreadNew, calls.ThreadInferred, calls.ThreadInferred}, threading)
	var annotated []string
	for _, e := range conversationEvents(t, r.log, conv) {
		if a, ok := e.Payload.(events.BlockAnnotated); ok {
			annotated = append(annotated, a.Reason)
		}
	}
	assert.Len(t, annotated, 2, "each answer, the first time it is sent back")
	for _, reason := range annotated {
		assert.Contains(t, reason, "by reference (item_reference)")
	}
	verify(t, r.log, conv)
	checked, err := replay.Check(t.Context(), r.log, conv)
	require.NoError(t, err)
	assert.Empty(t, checked.Findings)

	// A reference to an answer the conversation went on from branches
	// there, as the same call sending the answer whole would.
	branch := referenceCall(t, r.gw.URL, userItem("first question"), referenceTo("msg_1"), userItem("another question"))
	require.NotEqual(t, conv, branch)
	assert.Equal(t, []string{"be brief", "first question", "answer 1", "another question", "answer 4"}, blockTexts(t, r.log, branch))
	first := conversationEvents(t, r.log, branch)[0].Payload.(events.ConversationStarted)
	assert.Equal(t, conv, first.ForkedFrom)
	verify(t, r.log, branch)
}

// TestUnknownItemReferenceIsRecordedAsSent: a reference to an item no
// gateway recorded (output made before the app pointed at turnlog) is
// recorded as the reference, and the call verifies.
func TestUnknownItemReferenceIsRecordedAsSent(t *testing.T) {
	up := newNumberedResponses(t)
	r := newRig(t, up.URL, "")
	conv := referenceCall(t, r.gw.URL, userItem("first question"), referenceTo("msg_elsewhere"), userItem("second question"))
	require.NotEmpty(t, conv)
	assert.Equal(t, []string{"be brief", "first question", "", "second question", "answer 1"}, blockTexts(t, r.log, conv))
	verify(t, r.log, conv)
}

// TestEraseRemovesItemReferenceEntries: the index entries by which a
// reference finds its item go with an erased conversation, so that a later
// reference to its items names nothing.
func TestEraseRemovesItemReferenceEntries(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newNumberedResponses(t)
	gw := sharedGateway(t, s, up.URL)
	conv := referenceCall(t, gw.URL, userItem("first question"))
	require.Equal(t, conv, referenceCall(t, gw.URL, userItem("first question"), referenceTo("msg_1"), userItem("second question")))

	ctx := context.Background()
	admin, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	got, err := admin.Erase(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, 7, got.Threading, "two states, two response IDs, two output items, the latest-call entry")
	again := referenceCall(t, gw.URL, userItem("first question"), referenceTo("msg_1"), userItem("second question"))
	assert.NotEqual(t, conv, again)
	assert.Equal(t, []string{"be brief", "first question", "", "second question", "answer 3"}, blockTexts(t, admin, again),
		"the erased answer is not read back into a new conversation")
}

// storedItemsUpstream is a strict stand-in of a provider that stores its
// output (the Responses API's store, on by default): an item reference to
// an item it did not produce is refused, as OpenAI refuses it; its
// answers say how many items the model read, references resolved.
type storedItemsUpstream struct {
	*httptest.Server
	mu    sync.Mutex
	n     int
	items map[string]bool
}

func newStoredItemsUpstream(t *testing.T) *storedItemsUpstream {
	u := &storedItemsUpstream{items: map[string]bool{}}
	u.Server = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.Close)
	return u
}

func (u *storedItemsUpstream) serve(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Input []struct {
			Type    string          `json:"type"`
			Role    string          `json:"role"`
			ID      string          `json:"id"`
			Content json.RawMessage `json:"content"`
		} `json:"input"`
		Stream bool `json:"stream"`
	}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil || r.URL.Path != "/v1/responses" {
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":"bad request: %v","type":"invalid_request_error"}}`, err)
		return
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	last, refs, items := "", 0, -1
	for _, it := range body.Input {
		if it.Role == "system" || it.Role == "developer" {
			continue
		}
		items++
		if it.Type == "item_reference" {
			if !u.items[it.ID] {
				w.WriteHeader(404)
				fmt.Fprintf(w, `{"error":{"message":"Item with id '%s' not found.","type":"invalid_request_error","param":"input"}}`, it.ID)
				return
			}
			refs++
			continue
		}
		// A message's content: a string, or parts with text.
		if json.Unmarshal(it.Content, &last) != nil {
			var parts []struct{ Text string }
			_ = json.Unmarshal(it.Content, &parts)
			for _, p := range parts {
				last = p.Text
			}
		}
	}
	u.n++
	id := fmt.Sprintf("msg_%d", u.n)
	u.items[id] = true
	answer := fmt.Sprintf("answer to %q after %d items, %d by reference", last, items, refs)
	msg := fmt.Sprintf(`{"type":"message","id":%q,"status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}`, id, answer)
	resp := fmt.Sprintf(`{"id":"resp_%d","object":"response","created_at":1,"status":"completed","model":"m","output":[%s],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`, u.n, msg)
	if !body.Stream {
		io.WriteString(w, resp)
		return
	}
	// The events a streaming client builds its text from, as OpenAI sends
	// them: the response begun, the item added, its text's delta, the
	// item done, the response completed.
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(typ, data string) { fmt.Fprintf(w, "event: %s\ndata: {\"type\":%q,%s}\n\n", typ, typ, data) }
	event("response.created", fmt.Sprintf(`"sequence_number":0,"response":{"id":"resp_%d","object":"response","created_at":1,"status":"in_progress","model":"m","output":[]}`, u.n))
	event("response.output_item.added", fmt.Sprintf(`"sequence_number":1,"output_index":0,"item":{"type":"message","id":%q,"status":"in_progress","role":"assistant","content":[]}`, id))
	event("response.output_text.delta", fmt.Sprintf(`"sequence_number":2,"output_index":0,"item_id":%q,"content_index":0,"delta":%q,"logprobs":[]`, id, answer))
	event("response.output_item.done", fmt.Sprintf(`"sequence_number":3,"output_index":0,"item":%s`, msg))
	event("response.completed", fmt.Sprintf(`"sequence_number":4,"response":%s`, resp))
}

// TestOpenAISDKItemReferences: the official openai SDK sending each
// earlier answer back as an item reference, streamed and not, records one
// conversation whose history is the model's answers; both directions pass
// byte for byte, and replay --verify and --check pass.
func TestOpenAISDKItemReferences(t *testing.T) {
	referenceChat(t, "responses_reference.js")
}

// interleave is a[0], b[0], a[1], b[1], ...
func interleave(a, b []string) []string {
	var out []string
	for i := range a {
		out = append(out, a[i], b[i])
	}
	return out
}

// TestImportedItemReferences: import --calls reads a log of calls whose
// later requests send earlier answers back by reference, and records them
// as one conversation, as the gateway does live.
func TestImportedItemReferences(t *testing.T) {
	r := newRig(t, "", "")
	response := func(n int, text string) string {
		return fmt.Sprintf(`{"id":"resp_%d","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":%q,"annotations":[]}]}],"usage":{"input_tokens":5,"output_tokens":3,"total_tokens":8}}`, n, n, text)
	}
	log := `{"api":"responses","time":"2026-01-02T03:04:05Z","request":{"model":"m","input":[` + userItem("first question") + `]},"response":` + response(1, "answer 1") + "}\n" +
		`{"api":"responses","time":"2026-01-02T03:04:09Z","request":{"model":"m","input":[` + userItem("first question") + `,` + referenceTo("msg_1") + `,` + userItem("second question") + `]},"response":` + response(2, "answer 2") + "}\n"
	lines, err := gateway.ReadCalls(strings.NewReader(log), 1<<20)
	require.NoError(t, err)
	rec, err := gateway.NewRecorder(gateway.Config{Log: r.log, Threads: calls.NewMemStore(100)})
	require.NoError(t, err)
	got, err := rec.Import(t.Context(), lines)
	require.NoError(t, err)
	require.Len(t, got, 2)
	require.Equal(t, got[0].Conversation, got[1].Conversation)
	assert.Equal(t, []string{"first question", "answer 1", "second question", "answer 2"}, blockTexts(t, r.log, got[0].Conversation))
	verify(t, r.log, got[0].Conversation)
}

// TestVercelAISDKChat: a chat written with the Vercel AI SDK (ai and
// @ai-sdk/openai, Responses API with store on by default), whose calls
// send the model's earlier answers back as item references, one call
// streamed: one conversation, its history the answers, byte for byte both
// ways, and replay --verify and --check pass.
func TestVercelAISDKChat(t *testing.T) {
	referenceChat(t, "vercel_chat.js")
}

// referenceChat runs script, a four-question chat ("Be brief.") that sends
// the model's earlier answers back as item references, against the strict
// stand-in through the gateway, and checks that it is one conversation
// holding the answers, byte for byte both ways, and that replay --verify
// and --check pass.
func referenceChat(t *testing.T, script string) {
	t.Helper()
	up := newStoredItemsUpstream(t)
	r := newRig(t, up.URL, "", managed)
	res := runSDK(t, script, "BASE_URL="+r.gw.URL+"/v1", "API_KEY="+token)
	assert.Equal(t, []string{
		`answer to "first question" after 0 items, 0 by reference`,
		`answer to "second question" after 2 items, 1 by reference`,
		`answer to "third question" after 4 items, 2 by reference`,
		`answer to "fourth question" after 6 items, 3 by reference`,
	}, res.Texts)
	sent, received, _ := r.wire.snapshot()
	assert.Equal(t, res.Sent, sent, "request bodies byte for byte")
	assert.Equal(t, res.Received, received, "response bodies byte for byte")
	require.Len(t, res.Conversations, 4)
	conv := res.Conversations[0]
	assert.Equal(t, []string{conv, conv, conv, conv}, res.Conversations, "one conversation")
	assert.Equal(t, append([]string{"Be brief."}, interleave([]string{"first question", "second question", "third question", "fourth question"}, res.Texts)...), blockTexts(t, r.log, conv))
	v := verify(t, r.log, conv)
	assert.Equal(t, 4, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, conv))
}
