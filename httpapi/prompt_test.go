package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
)

// TestPromptRoutes: an operator sets, locks and unlocks one conversation's
// prompt over HTTP; the worker's next request keeps it; the timeline says
// who did it.
func TestPromptRoutes(t *testing.T) {
	ts, l := startChatAPI(t)
	auth := "Bearer " + token
	chat(t, ts, l, "c1", "hello")

	status, body, _ := call(t, ts, "PUT", "/conversations/c1/prompt", auth, `{"text": "You are Ada.", "lock": true, "reason": "ticket 42", "by": "ada"}`)
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, true, body["changed"])
	assert.Equal(t, []any{"systemprompt.replaced", "systemprompt.locked"}, body["events"])

	status, body, _ = call(t, ts, "PUT", "/conversations/c1/prompt", auth, `{"text": "Other."}`)
	assert.Equal(t, http.StatusConflict, status)
	assert.Contains(t, body["error"], "locked (by operator:ada)")

	chat(t, ts, l, "c1", "still Ada?")
	status, body, _ = call(t, ts, "GET", "/conversations/c1/prompt", "Bearer "+token, "")
	require.Equal(t, http.StatusOK, status, "%v", body)
	sp := body["system_prompt"].(map[string]any)
	assert.Equal(t, "You are Ada.", sp["text"])
	assert.Equal(t, "operator", sp["source"])
	assert.Equal(t, "operator:ada", sp["locked_by"])

	status, body, _ = call(t, ts, "POST", "/conversations/c1/prompt/unlock", auth, "")
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.Equal(t, []any{"systemprompt.unlocked"}, body["events"])
	status, body, _ = call(t, ts, "POST", "/conversations/c1/prompt/lock", auth, `{"reason": "again"}`)
	require.Equal(t, http.StatusOK, status, "%v", body)

	var h struct {
		Events []struct {
			Type  string `json:"type"`
			Actor string `json:"actor"`
		} `json:"events"`
	}
	require.Equal(t, http.StatusOK, getJSON(t, ts, "/conversations/c1/timeline", &h))
	var ops []string
	for _, e := range h.Events {
		if strings.HasPrefix(e.Actor, "operator:") {
			ops = append(ops, e.Type+" by "+e.Actor)
		}
	}
	assert.Equal(t, []string{"systemprompt.replaced by operator:ada", "systemprompt.locked by operator:ada",
		"systemprompt.unlocked by operator:http", "systemprompt.locked by operator:http"}, ops)
}

func TestPromptRouteRefusals(t *testing.T) {
	ts, l := startChatAPI(t)
	auth := "Bearer " + token
	tests := []struct {
		name, method, path, auth, body string
		want                           int
		wantErr                        string
	}{
		{name: "set without the token", method: "PUT", path: "/conversations/c1/prompt", body: `{"text": "x"}`, want: http.StatusUnauthorized, wantErr: "token"},
		{name: "lock without the token", method: "POST", path: "/conversations/c1/prompt/lock", want: http.StatusUnauthorized, wantErr: "token"},
		{name: "unlock with a wrong token", method: "POST", path: "/conversations/c1/prompt/unlock", auth: "Bearer nope", want: http.StatusUnauthorized, wantErr: "wrong"},
		{name: "no text", method: "PUT", path: "/conversations/c1/prompt", auth: auth, body: `{"lock": true}`, want: http.StatusBadRequest, wantErr: `no "text"`},
		{name: "empty text", method: "PUT", path: "/conversations/c1/prompt", auth: auth, body: `{"text": "  "}`, want: http.StatusBadRequest, wantErr: "empty"},
		{name: "unknown key", method: "PUT", path: "/conversations/c1/prompt", auth: auth, body: `{"text": "x", "trust": "trusted"}`, want: http.StatusBadRequest, wantErr: "unknown field"},
		{name: "bad operator name", method: "PUT", path: "/conversations/c1/prompt", auth: auth, body: `{"text": "x", "by": "a b"}`, want: http.StatusBadRequest, wantErr: `"by"`},
		{name: "bad conversation ID", method: "PUT", path: "/conversations/a.b/prompt", auth: auth, body: `{"text": "x"}`, want: http.StatusBadRequest, wantErr: "conversation ID"},
		{name: "lock without a prompt", method: "POST", path: "/conversations/empty/prompt/lock", auth: auth, want: http.StatusConflict, wantErr: "no system prompt"},
		{name: "lock with a malformed body", method: "POST", path: "/conversations/c1/prompt/lock", auth: auth, body: `{"reason": 1}`, want: http.StatusBadRequest, wantErr: "malformed"},
		{name: "show a conversation without events", method: "GET", path: "/conversations/none/prompt", auth: auth, want: http.StatusNotFound, wantErr: "no events"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status, body, _ := call(t, ts, tc.method, tc.path, tc.auth, tc.body)
			assert.Equal(t, tc.want, status, "%v", body)
			assert.Contains(t, body["error"], tc.wantErr)
		})
	}
	for _, conv := range []string{"c1", "empty"} {
		seq, err := l.LastSeq(t.Context(), conv)
		require.NoError(t, err)
		assert.Zero(t, seq, "nothing was recorded for %s", conv)
	}
}

// TestPostMessageReservedDataAllowedByProfile: a reserved data key the
// request's profile allows (allow_request_data) is queued; the same key
// under the default profile is refused.
func TestPostMessageReservedDataAllowedByProfile(t *testing.T) {
	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	set, err := profile.Parse([]byte(profile.DefaultYAML + "  lenient:\n    middlewares: [template]\n    allow_request_data: [systemprompt.none]\n"))
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token, Profiles: set})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	auth := "Bearer " + token
	status, body, _ := call(t, ts, "POST", "/conversations/c/messages", auth, `{"text": "hi", "profile": "lenient", "data": {"systemprompt.none": "x"}}`)
	assert.Equal(t, http.StatusAccepted, status, "%v", body)
	status, body, _ = call(t, ts, "POST", "/conversations/c/messages", auth, `{"text": "hi", "data": {"systemprompt.none": "x"}}`)
	assert.Equal(t, http.StatusBadRequest, status, "%v", body)
}
