package gateway_test

import (
	"context"
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
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// The weather chat of the threading tests: a first call, and the tool
// call the stand-in upstream answers it with (call_1).
const (
	weatherAsk      = `{"role":"system","content":"s"},{"role":"user","content":"weather?"}`
	weatherToolCall = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null,"annotations":[]}`
)

// chatCaller returns what makes a Chat Completions call of msgs through a
// gateway, as a pass-through client, and returns its conversation.
func chatCaller(t *testing.T) func(gw *httptest.Server, msgs string) string {
	return func(gw *httptest.Server, msgs string) string {
		t.Helper()
		resp, body := post(t, gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
}

// sharedGateway is one `turnlog gateway` process: its own NATS connection
// as the worker role, its own log handle, the installation's threading
// index.
func sharedGateway(t *testing.T, s *natstest.Server, upstream string) *httptest.Server {
	t.Helper()
	hs, _, _, _ := workerGateway(t, s, upstream)
	return hs
}

// Two gateways behind a load balancer thread one chat alike whichever
// records each call, and a gateway started later (a restart) does too.
func TestThreadingSharedByGateways(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	call := chatCaller(t)
	first, a1 := weatherAsk, weatherToolCall
	conv := call(a, first)
	assert.NotEqual(t, conv, call(b, first), "the same first call on the other gateway is another chat")
	second := first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
	assert.Equal(t, conv, call(b, second), "gateway b continues the chat gateway a began")

	// A fork of the first call's state, on a gateway started afterwards.
	c := sharedGateway(t, s, up.URL)
	fork := call(c, first+`,`+a1+`,{"role":"tool","tool_call_id":"call_1","content":"rainy"}`)
	require.NotEqual(t, conv, fork)
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	evs := conversationEvents(t, l, fork)
	start, ok := evs[0].Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, conv, start.ForkedFrom)
	for _, cv := range []string{conv, fork} {
		verify(t, l, cv)
	}
}

// A gateway threads a continuation of a call it recorded from its own copy
// of the index, without asking the shared one; when another gateway has
// continued that conversation since, the guess must not stand: the call
// continues an earlier state, so it forks the conversation there.
func TestGatewayOwnIndexDoesNotHideAnotherGatewaysCall(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	call := chatCaller(t)
	first, a1 := weatherAsk, weatherToolCall
	conv := call(a, first)
	require.Equal(t, conv, call(b, first+`,`+a1+`,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`), "gateway b continues the chat")
	// Gateway a recorded the first call and last saw it as the chat's
	// latest; the chat has moved on at gateway b.
	forked := first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"cloudy"}`
	resp, body := post(t, a.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m","messages":[`+forked+`]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	fork := resp.Header.Get("Turnlog-Conversation")
	require.NotEqual(t, conv, fork, "a call continuing the first call's state forks the chat that moved on")
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	start, ok := conversationEvents(t, l, fork)[0].Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, conv, start.ForkedFrom)
	for _, cv := range []string{conv, fork} {
		verify(t, l, cv)
	}
	// And a continuation of the fork's latest call lands in the fork.
	var answer struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	require.NoError(t, json.Unmarshal(body, &answer))
	require.NotEmpty(t, answer.Choices)
	assert.Equal(t, fork, call(a, forked+`,`+string(answer.Choices[0].Message)+`,{"role":"user","content":"thanks"}`), "a continues the fork it recorded")
}

// Erasing a conversation removes the threading entries of its calls: no
// hash of its content stays in the index, and an app that re-sends the
// erased history starts a new conversation, on a gateway that recorded
// the chat (its own copy of the index and its cached Turn are stale) and
// on one started afterwards, instead of reviving the erased ID.
func TestEraseRemovesThreadingEntries(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	call := chatCaller(t)
	first, a1 := weatherAsk, weatherToolCall
	second := first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
	conv := call(a, first)
	require.Equal(t, conv, call(a, second))

	ctx := context.Background()
	admin, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	kv, err := admin.JetStream().KeyValue(ctx, admin.Names().ThreadsBucket)
	require.NoError(t, err)
	live := func() map[string]string {
		out := map[string]string{}
		keys, err := kv.ListKeys(ctx)
		require.NoError(t, err)
		for k := range keys.Keys() {
			e, err := kv.Get(ctx, k)
			require.NoError(t, err)
			out[k] = string(e.Value())
		}
		return out
	}
	before := live()
	var ofConv int
	for k, v := range before {
		if strings.HasPrefix(v, conv+"@") || k == "c."+conv {
			ofConv++
		}
	}
	require.Equal(t, 3, ofConv, "two states and the latest-call entry: %v", before)

	got, err := admin.Erase(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Threading)
	for k, v := range live() {
		assert.False(t, strings.Contains(v, conv) || strings.Contains(k, conv), "entry %s=%s of the erased conversation", k, v)
	}

	third := second + `,{"role":"assistant","content":"It is sunny."},{"role":"user","content":"thanks"}`
	later := sharedGateway(t, s, up.URL)
	assert.NotEqual(t, conv, call(later, third), "a later gateway starts a new conversation")
	assert.NotEqual(t, conv, call(a, third), "the gateway that recorded the chat starts a new one too")
}

// Erasing a conversation recorded through the Responses API removes the
// entries of its responses' IDs too: a later previous_response_id naming
// an erased response starts a new conversation.
func TestEraseRemovesResponseIDEntries(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	var n atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","status":"completed","model":"m","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"hi","annotations":[]}]}],"usage":{"input_tokens":3,"output_tokens":1,"total_tokens":4}}`, n.Add(1), n.Load())
	}))
	t.Cleanup(up.Close)
	gw := sharedGateway(t, s, up.URL)
	call := func(body string) string {
		resp, b := post(t, gw.URL+"/v1/responses", map[string]string{"Turnlog-Token": token}, body)
		require.Equal(t, 200, resp.StatusCode, "%s", b)
		return resp.Header.Get("Turnlog-Conversation")
	}
	conv := call(`{"model":"m","input":"hello"}`)
	require.Equal(t, conv, call(`{"model":"m","input":"and then?","previous_response_id":"resp_1"}`))

	ctx := context.Background()
	admin, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	verify(t, admin, conv) // the second call's input is the blocks it names
	got, err := admin.Erase(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, 7, got.Threading, "two states, two response IDs, their two output items, the latest-call entry")
	assert.NotEqual(t, conv, call(`{"model":"m","input":"more","previous_response_id":"resp_2"}`))
}

// A gateway that never saw a chat finds the state it forks from behind
// model outputs no call recorded (the client edited its last answer):
// the shared index is asked for the earlier states in one batched read,
// with the gateway's own credential.
func TestThreadingFindsAStateBehindUnrecordedOutputs(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	call := chatCaller(t)
	first, a1 := weatherAsk, weatherToolCall
	conv := call(a, first)
	second := first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
	require.Equal(t, conv, call(a, second))

	edited := second + `,{"role":"assistant","content":"an answer the model never gave"},{"role":"user","content":"and tomorrow?"}` +
		`,{"role":"assistant","content":"nor this one"},{"role":"user","content":"and after?"}`
	fork := call(sharedGateway(t, s, up.URL), edited)
	require.NotEqual(t, conv, fork)
	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	start, ok := conversationEvents(t, l, fork)[0].Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, conv, start.ForkedFrom, "forked from the first call's state, the longest one recorded")
	verify(t, l, fork)
}

// Erasing a conversation whose calls named their end user removes its
// states, which are that user's (calls.ScopedChain): erase finds each
// call's scope in its inference.started.
func TestEraseRemovesScopedThreadingEntries(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newFixedUpstream(t, chatAnswer("Hello! How can I help?"))
	gw := sharedGateway(t, s, up.URL)
	send := func(msgs string) string {
		t.Helper()
		resp, body := post(t, gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, `{"model":"m","user":"ada","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	first := `{"role":"user","content":"hi"}`
	conv := send(first)
	second := first + `,{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"my invoice"}`
	require.Equal(t, conv, send(second))

	ctx := context.Background()
	admin, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	kv, err := admin.JetStream().KeyValue(ctx, admin.Names().ThreadsBucket)
	require.NoError(t, err)
	got, err := admin.Erase(ctx, conv)
	require.NoError(t, err)
	assert.Equal(t, 3, got.Threading, "two states and the latest-call entry")
	keys, err := kv.ListKeys(ctx)
	require.NoError(t, err)
	for k := range keys.Keys() {
		e, err := kv.Get(ctx, k)
		require.NoError(t, err)
		assert.NotContains(t, string(e.Value()), conv, "entry %s of the erased conversation", k)
	}
	third := second + `,{"role":"assistant","content":"Hello! How can I help?"},{"role":"user","content":"thanks"}`
	assert.NotEqual(t, conv, send(third), "the erased chat's history starts a new conversation")
}
