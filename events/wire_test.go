package events_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/events"
)

// TestWireVersions: the closing events of a model call recorded before
// the wire request existed (version 1) still read, as calls without one;
// version 2 carries it through the codec; a newer version is refused, not
// read without what it adds.
func TestWireVersions(t *testing.T) {
	hash := strings.Repeat("3c", 32)
	tests := []struct {
		name    string
		typ     events.Type
		v       int
		payload map[string]any
		want    events.Payload
		wantIs  error
	}{
		{name: "finished v1", typ: events.TypeInferenceFinished, v: 1,
			payload: map[string]any{"inference_id": "i1", "prompt_tokens": 3, "stop": "stop", "duration": int64(time.Second)},
			want:    events.InferenceFinished{InferenceID: "i1", PromptTokens: 3, StopReason: "stop", Duration: time.Second}},
		{name: "failed v1", typ: events.TypeInferenceFailed, v: 1,
			payload: map[string]any{"inference_id": "i2", "error": "boom", "duration": int64(time.Second)},
			want:    events.InferenceFailed{InferenceID: "i2", Error: "boom", Duration: time.Second}},
		{name: "finished v2", typ: events.TypeInferenceFinished, v: 2,
			payload: map[string]any{"inference_id": "i1", "duration": int64(0), "wire_sha256": hash, "wire_version": "scripted/1", "wire_params": `{"model":"m"}`},
			want:    events.InferenceFinished{InferenceID: "i1", Wire: events.Wire{SHA256: hash, Version: "scripted/1", Params: `{"model":"m"}`}}},
		{name: "failed v2 without a request", typ: events.TypeInferenceFailed, v: 2,
			payload: map[string]any{"inference_id": "i2", "error": "render", "duration": int64(0)},
			want:    events.InferenceFailed{InferenceID: "i2", Error: "render"}},
		{name: "failed v2 with a partial output", typ: events.TypeInferenceFailed, v: 2,
			payload: map[string]any{"inference_id": "i2", "error": "cut", "duration": int64(0),
				"partial": []any{map[string]any{"id": "p1", "kind": "llm_text", "text": "Hel"}, map[string]any{"id": "p2", "kind": "tool_call", "call_id": "c1", "tool": "t", "args": `{"a`}}},
			want: events.InferenceFailed{InferenceID: "i2", Error: "cut", Partial: []events.Block{
				{ID: "p1", Kind: events.KindLLMText, Text: "Hel"}, {ID: "p2", Kind: events.KindToolCall, CallID: "c1", ToolName: "t", Arguments: `{"a`}}}},
		{name: "failed with an empty partial output", typ: events.TypeInferenceFailed, v: 2,
			payload: map[string]any{"inference_id": "i2", "error": "cut", "duration": int64(0), "partial": []any{}},
			want:    events.InferenceFailed{InferenceID: "i2", Error: "cut"}},
		{name: "partial block without an ID", typ: events.TypeInferenceFailed, v: 2,
			payload: map[string]any{"inference_id": "i2", "error": "cut", "duration": int64(0), "partial": []any{map[string]any{"kind": "llm_text", "text": "Hel"}}},
			wantIs:  events.ErrInvalid},
		{name: "v3", typ: events.TypeInferenceFinished, v: 3,
			payload: map[string]any{"inference_id": "i1", "duration": int64(0)}, wantIs: events.ErrNewerVersion},
		{name: "hash not hex", typ: events.TypeInferenceFinished, v: 2,
			payload: map[string]any{"inference_id": "i1", "duration": int64(0), "wire_sha256": strings.Repeat("X", 64), "wire_version": "scripted/1"},
			wantIs:  events.ErrInvalid},
		{name: "hash without a version", typ: events.TypeInferenceFailed, v: 2,
			payload: map[string]any{"inference_id": "i1", "error": "e", "duration": int64(0), "wire_sha256": hash},
			wantIs:  events.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data := message(t, wire(t, map[string]any{"type": string(tc.typ), "v": tc.v, "payload": tc.payload}))
			got, err := events.Decode(data)
			if tc.wantIs != nil {
				require.Error(t, err)
				assert.True(t, errors.Is(err, tc.wantIs), "got %v, want %v", err, tc.wantIs)
				return
			}
			require.NoError(t, err)
			require.Len(t, got, 1)
			assert.Equal(t, tc.want, got[0].Payload)
			assert.Equal(t, 2, got[0].Version, "read as the current version")
			// And written again as version 2, with the same payload.
			again, err := events.Encode(got[0])
			require.NoError(t, err)
			back, err := events.Decode(again)
			require.NoError(t, err)
			assert.Equal(t, tc.want, back[0].Payload)
		})
	}
}
