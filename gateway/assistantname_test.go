package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// TestAgentNamingItsAnswersContinues: LangChain's agent (createAgent of
// the npm "langchain" package) names the model's messages after its graph
// node when it sends them back ({"role": "assistant", "name": "model",
// ...}), a name the model never wrote. The name was compared as a
// participant's, so no call matched the state the previous one left: an
// agent's chat of three turns with a tool loop each was six conversations
// of one call. The name a client gives the model's own answer is the
// client's label, kept in the record (the block's gateway.item) but not
// compared: the chat is one conversation, and --verify and --check pass.
// A user's name still keeps two participants apart
// (TestGroupChatParticipantsAreNotMerged).
func TestAgentNamingItsAnswersContinues(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req struct {
			Messages []struct{ Role string } `json:"messages"`
		}
		_ = json.Unmarshal(body, &req)
		w.Header().Set("Content-Type", "application/json")
		if req.Messages[len(req.Messages)-1].Role == "user" {
			io.WriteString(w, `{"id":"c","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_`+string(rune('a'+len(req.Messages)))+`","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}]}`)
			return
		}
		io.WriteString(w, chatAnswer("It is sunny."))
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	var convs []string
	call := func(msgs []string) {
		t.Helper()
		resp, _ := postOK(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
			`{"model":"m","tools":[{"type":"function","function":{"name":"weather","parameters":{"type":"object"}}}],"messages":[`+strings.Join(msgs, ",")+`]}`)
		convs = append(convs, resp.Header.Get("Turnlog-Conversation"))
	}
	msgs := []string{`{"role":"system","content":[{"type":"text","text":"You are a weather bot."}]}`}
	for _, q := range []string{"weather in Paris?", "and tomorrow?", "thanks"} {
		msgs = append(msgs, `{"role":"user","content":"`+q+`"}`)
		call(msgs)
		id := "call_" + string(rune('a'+len(msgs)))
		msgs = append(msgs,
			`{"role":"assistant","content":"","name":"model","tool_calls":[{"id":"`+id+`","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]}`,
			`{"role":"tool","content":"{\"temp\":21}","name":"weather","tool_call_id":"`+id+`"}`)
		call(msgs)
		msgs = append(msgs, `{"role":"assistant","content":"It is sunny.","name":"model"}`)
	}
	require.Len(t, convs, 6)
	for i, c := range convs {
		assert.Equal(t, convs[0], c, "call %d: one agent chat, one conversation", i+1)
	}
	v := verify(t, r.log, convs[0])
	assert.Equal(t, 6, v.Inferences)
	assert.Empty(t, checkRules(t, r.log, convs[0]))
	named := 0
	for _, e := range conversationEvents(t, r.log, convs[0]) {
		if a, ok := e.Payload.(events.BlockAnnotated); ok && strings.Contains(a.Meta[calls.MetaItem], `"name":"model"`) {
			named++
		}
	}
	assert.Equal(t, 5, named, "the record keeps the name each answer was sent back with")
}
