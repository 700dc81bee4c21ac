package gateway_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/replay"
)

// TestHeadersThatChangeTheCallAreRecorded: anthropic-beta (a context
// window, interleaved thinking, context management) and anthropic-version
// change what the model sees or does, yet a call's record held its body
// alone, so replay could not say what was asked. They are recorded with
// the call (inference.started's gateway map, the calls view, replay's
// text), credentials never; import --calls reads them from a line's
// "headers", leaving out the rest.
func TestHeadersThatChangeTheCallAreRecorded(t *testing.T) {
	up := newFixedUpstream(t, `{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":4}}`)
	r := newRig(t, "", up.URL)
	h := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "betas", "anthropic-version": "2023-06-01",
		"anthropic-beta": "context-1m-2025-08-07,interleaved-thinking-2025-05-14", "x-api-key": "sk-ant-secret"}
	resp, body := post(t, r.gw.URL+"/v1/messages", h, `{"model":"c","max_tokens":50,"messages":[{"role":"user","content":"hello"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)

	started, _, _ := inferences(t, r, "betas")
	require.Len(t, started, 1)
	assert.Equal(t, "2023-06-01", started[0].Gateway["header.anthropic-version"])
	assert.Equal(t, "context-1m-2025-08-07,interleaved-thinking-2025-05-14", started[0].Gateway["header.anthropic-beta"])
	for k, v := range started[0].Gateway {
		assert.NotContains(t, v, "sk-ant-secret", k)
		assert.NotContains(t, k, "api-key")
	}
	page, err := replay.Calls(context.Background(), r.log, "betas", replay.Page{})
	require.NoError(t, err)
	require.Len(t, page.Calls, 1)
	assert.Equal(t, map[string]string{"anthropic-version": "2023-06-01", "anthropic-beta": "context-1m-2025-08-07,interleaved-thinking-2025-05-14"}, page.Calls[0].Headers)
	verify(t, r.log, "betas")

	// A logged call's headers: the recorded ones are kept, the rest
	// (a credential) left out.
	l, err := calls.ParseLogged([]byte(`{"api":"messages","time":"2026-01-02T03:04:05Z","conversation":"imported-betas",` +
		`"headers":{"Anthropic-Beta":"context-1m-2025-08-07","x-api-key":"sk-ant-secret","Authorization":"Bearer x"},` +
		`"request":{"model":"c","max_tokens":50,"messages":[{"role":"user","content":"hello"}]},` +
		`"response":{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","usage":{"input_tokens":9,"output_tokens":4}}}`))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"anthropic-beta": "context-1m-2025-08-07"}, l.Headers)
	assert.NotContains(t, string(l.Marshal()), "sk-ant-secret")
	rec, err := gateway.NewRecorder(gateway.Config{Log: r.log, Threads: calls.NewMemStore(100)})
	require.NoError(t, err)
	_, err = rec.Record(context.Background(), l)
	require.NoError(t, err)
	started, _, _ = inferences(t, r, "imported-betas")
	require.Len(t, started, 1)
	assert.Equal(t, "context-1m-2025-08-07", started[0].Gateway["header.anthropic-beta"])
}
