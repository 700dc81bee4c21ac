package scripted_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// TestWireIsTheDocumentedRendering: the scripted engine's wire is the JSON
// its documentation spells out, field by field, and what a call records
// renders it again.
func TestWireIsTheDocumentedRendering(t *testing.T) {
	turn := &projector.Turn{Blocks: []events.Block{
		{ID: "s", Kind: events.KindSystem, Text: "Be <brief>.", Trust: events.Trusted, Meta: map[string]string{"k": "v"}},
		{ID: "u", Kind: events.KindUser, Text: "count the words in a b"},
		{ID: "r", Kind: events.KindReasoning, Text: "a tool"},
		{ID: "c", Kind: events.KindToolCall, CallID: "call_1", ToolName: "word_count", Arguments: `{"text":"a b"}`},
		{ID: "t", Kind: events.KindToolResult, CallID: "call_1", Text: "oops", IsError: true},
	}}
	in := engine.Input{Turn: turn, Model: "m", Tools: []engine.ToolSpec{{Name: "word_count", Parameters: json.RawMessage(`{"type": "object"}`)}}}
	body, err := scripted.Wire(in)
	require.NoError(t, err)
	assert.Equal(t, `{"model":"m","blocks":[`+
		`{"kind":"system","text":"Be \u003cbrief\u003e."},`+
		`{"kind":"user","text":"count the words in a b"},`+
		`{"kind":"reasoning","text":"a tool"},`+
		`{"kind":"tool_call","call_id":"call_1","tool":"word_count","arguments":"{\"text\":\"a b\"}"},`+
		`{"kind":"tool_result","text":"oops","call_id":"call_1","is_error":true}],`+
		`"tools":[{"name":"word_count","parameters":{"type":"object"}}]}`, string(body))

	ctx, rec := engine.WithWireRecorder(context.Background(), true)
	_, err = scripted.New(nil).Infer(ctx, in, nil)
	require.NoError(t, err)
	assert.Equal(t, string(body), string(rec.Body()))
	w := rec.Wire()
	assert.Equal(t, scripted.WireVersion, w.Version)
	again, err := scripted.RenderWire([]byte(w.Params), turn)
	require.NoError(t, err)
	assert.Equal(t, string(body), string(again))
}
