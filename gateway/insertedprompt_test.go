package gateway_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestInsertedSystemPromptIsRecordedWhereItWasSent: an app that puts a
// second system message among its history (after the first, before the
// user's) has inserted one block. The call was recorded as the prompt set
// at the end of the Turn and then the whole Turn reordered "as the call
// sends it", which reads as the app moving its history; the prompt is now
// set at the place it was sent, and nothing is reordered.
func TestInsertedSystemPromptIsRecordedWhereItWasSent(t *testing.T) {
	s := natstest.Start(t, natstest.WithAuth())
	up := newChatUpstream(t, "")
	gw := sharedGateway(t, s, up.URL)
	named := func(msgs string) string {
		t.Helper()
		resp, body := post(t, gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "inserted"},
			`{"model":"m","messages":[`+msgs+`]}`)
		require.Equal(t, 200, resp.StatusCode, "%s", body)
		var r struct {
			Choices []struct {
				Message json.RawMessage `json:"message"`
			} `json:"choices"`
		}
		require.NoError(t, json.Unmarshal(body, &r))
		require.NotEmpty(t, r.Choices)
		return string(r.Choices[0].Message)
	}
	const sys = `{"role":"system","content":"You are a weather bot."}`
	first := `{"role":"user","content":"Weather in Paris?"}`
	answer := named(sys + `,` + first)
	named(sys + `,{"role":"system","content":"Answer in French."},` + first + `,` + answer + `,{"role":"user","content":"And Lyon?"}`)

	l, err := eventlog.Open(context.Background(), s.Conn)
	require.NoError(t, err)
	var sets []events.SystemPromptSet
	var reorders int
	for _, e := range conversationEvents(t, l, "inserted") {
		switch p := e.Payload.(type) {
		case events.SystemPromptSet:
			sets = append(sets, p)
		case events.BlocksReordered:
			reorders++
		}
	}
	require.Len(t, sets, 2, "the first call's prompt, and the inserted one")
	assert.Equal(t, "Answer in French.", sets[1].Text)
	assert.Equal(t, 1, sets[1].Index, "set where the call sent it: after the first prompt")
	assert.Zero(t, reorders, "no block moved")
	verify(t, l, "inserted")
}
