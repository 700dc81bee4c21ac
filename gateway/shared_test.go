package gateway_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/natsauth"
)

// sharedGateway is one `turnlog gateway` process: its own NATS connection
// as the worker role, its own log handle, the installation's threading
// index.
func sharedGateway(t *testing.T, s *natstest.Server, upstream string) *httptest.Server {
	t.Helper()
	ctx := context.Background()
	nc := s.ConnectAs(t, natsauth.Worker)
	l, err := eventlog.Open(ctx, nc, eventlog.WithWriterRole(string(natsauth.Worker)))
	require.NoError(t, err)
	threads, err := l.Threads(ctx)
	require.NoError(t, err, "the worker role opens (and on first use creates) the threading index")
	g, err := gateway.New(gateway.Config{Log: l, Connected: nc.IsConnected, Token: token, OpenAIUpstream: upstream + "/v1", Threads: threads})
	require.NoError(t, err)
	hs := httptest.NewServer(g)
	t.Cleanup(hs.Close)
	return hs
}

// Two gateways behind a load balancer thread one chat alike whichever
// records each call, and a gateway started later (a restart) does too.
func TestThreadingSharedByGateways(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	a := sharedGateway(t, s, up.URL)
	b := sharedGateway(t, s, up.URL)
	h := map[string]string{"Turnlog-Token": token}
	call := func(gw *httptest.Server, msgs string) string {
		resp, body := post(t, gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	first := `{"role":"system","content":"s"},{"role":"user","content":"weather?"}`
	a1 := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null,"annotations":[]}`
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
	h := map[string]string{"Turnlog-Token": token}
	call := func(gw *httptest.Server, msgs string) string {
		resp, body := post(t, gw.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		return resp.Header.Get("Turnlog-Conversation")
	}
	first := `{"role":"system","content":"s"},{"role":"user","content":"weather?"}`
	a1 := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null,"annotations":[]}`
	conv := call(a, first)
	require.Equal(t, conv, call(b, first+`,`+a1+`,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`), "gateway b continues the chat")
	// Gateway a recorded the first call and last saw it as the chat's
	// latest; the chat has moved on at gateway b.
	forked := first + `,` + a1 + `,{"role":"tool","tool_call_id":"call_1","content":"cloudy"}`
	resp, body := post(t, a.URL+"/v1/chat/completions", h, `{"model":"m","messages":[`+forked+`]}`)
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
