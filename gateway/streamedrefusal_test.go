package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// TestStreamedRefusalIsRecorded: a model that refuses writes its refusal
// in "refusal", streamed in refusal deltas. The app shows that text; a
// call that is not streamed keeps it in its answer's item, but a streamed
// one kept only a digest of it, so the last answer of a conversation, which
// no later call sends back, had nothing of what the app was told. Its
// block now keeps the refusal as a response that is not streamed writes
// it, in gateway.streamed, beside the annotations.
func TestStreamedRefusalIsRecorded(t *testing.T) {
	const refusal = "I can't help with that."
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":null,"refusal":""}`, `{"refusal":"I can't "}`, `{"refusal":"help with that."}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	out := onlyCallsOutput(t, r, `{"model":"m","stream":true,"messages":[{"role":"user","content":"do something bad"}]}`)
	require.Len(t, out, 1)
	var streamed struct {
		Refusal string `json:"refusal"`
	}
	require.NotEmpty(t, out[0].Meta[calls.MetaStreamed], "the refusal the app got is in the record")
	require.NoError(t, json.Unmarshal([]byte(out[0].Meta[calls.MetaStreamed]), &streamed))
	assert.Equal(t, refusal, streamed.Refusal)
}

// TestStreamedSpokenAnswerKeepsItsTranscript: an audio model's streamed
// answer names its audio and streams its transcript, the words the app
// shows or plays, in audio deltas. A call that is not streamed keeps them
// in its answer's item; a streamed one kept only the audio's ID (in a
// digest), so the record held nothing of what the model said. Its block
// now keeps the audio's ID and transcript in gateway.streamed (not the
// audio's data, which the provider keeps by that ID).
func TestStreamedSpokenAnswerKeepsItsTranscript(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":null}`, `{"audio":{"id":"audio_1","transcript":"Hello "}}`,
			`{"audio":{"transcript":"there."}}`, `{"audio":{"data":"UklGRg=="}}`, `{"audio":{"expires_at":1}}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	out := onlyCallsOutput(t, r, `{"model":"m","modalities":["text","audio"],"stream":true,"messages":[{"role":"user","content":"say hello"}]}`)
	require.Len(t, out, 1)
	require.NotEmpty(t, out[0].Meta[calls.MetaStreamed], "the transcript the app got is in the record")
	assert.JSONEq(t, `{"audio":{"id":"audio_1","transcript":"Hello there."}}`, out[0].Meta[calls.MetaStreamed])
}

// TestStreamedReasoningContentIsRecorded: OpenAI-compatible servers of
// reasoning models (DeepSeek, vLLM, Qwen; Ollama and OpenRouter name it
// "reasoning") stream the model's reasoning in reasoning_content deltas
// before its answer, and apps show it as it comes. A call that is not
// streamed keeps it in its answer's item; a streamed one kept nothing of
// it. Its block now keeps it in gateway.streamed, under the name the
// stream gave it.
func TestStreamedReasoningContentIsRecorded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		name := "reasoning_content"
		if strings.Contains(string(body), `"ollama"`) {
			name = "reasoning"
		}
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":""}`, `{"` + name + `":"Two plus two "}`, `{"` + name + `":"is four."}`, `{"content":"4."}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	for _, model := range []string{"deepseek", "ollama"} {
		t.Run(model, func(t *testing.T) {
			out := onlyCallsOutput(t, r, `{"model":"`+model+`","stream":true,"messages":[{"role":"user","content":"2+2?"}]}`)
			require.Len(t, out, 1)
			assert.Equal(t, "4.", out[0].Text)
			name := map[string]string{"deepseek": "reasoning_content", "ollama": "reasoning"}[model]
			require.NotEmpty(t, out[0].Meta[calls.MetaStreamed], "the reasoning the app got is in the record")
			assert.JSONEq(t, `{"`+name+`":"Two plus two is four."}`, out[0].Meta[calls.MetaStreamed])
		})
	}
}

// TestStreamedReasoningBeforeToolCallsIsRecorded: a reasoning model
// served OpenAI-compatibly (DeepSeek, vLLM, Qwen) that answers with tool
// calls alone streams its reasoning, then the calls, with no text. The
// app got the reasoning; the record kept it only on a text block, so an
// answer of tool calls lost it. It is kept on the message's first block,
// as a response that is not streamed keeps its item.
func TestStreamedReasoningBeforeToolCallsIsRecorded(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		for _, d := range []string{`{"role":"assistant","content":null,"reasoning_content":"I need "}`, `{"reasoning_content":"the time."}`,
			`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{}"}}]}`} {
			fmt.Fprintf(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":null}]}\n\n", d)
		}
		io.WriteString(w, "data: {\"id\":\"c\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n")
	}))
	t.Cleanup(up.Close)
	r := newRig(t, up.URL, "")
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token},
		`{"model":"deepseek","stream":true,"tools":[{"type":"function","function":{"name":"get_time","parameters":{"type":"object"}}}],"messages":[{"role":"user","content":"time?"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	conv := resp.Header.Get("Turnlog-Conversation")
	verify(t, r.log, conv)
	page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
	require.NoError(t, err)
	require.Len(t, page.Calls, 1)
	out := page.Calls[0].Output
	require.Len(t, out, 1)
	assert.Equal(t, "call_1", out[0].CallID)
	require.NotEmpty(t, out[0].Meta[calls.MetaStreamed], "the reasoning the app got is in the record")
	assert.JSONEq(t, `{"reasoning_content":"I need the time."}`, out[0].Meta[calls.MetaStreamed])
	// The app sends the call back as it got it: the same block.
	resp, body = post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": conv},
		`{"model":"deepseek","stream":true,"messages":[{"role":"user","content":"time?"},`+
			`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_time","arguments":"{}"}}]},`+
			`{"role":"tool","tool_call_id":"call_1","content":"noon"}]}`)
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	verify(t, r.log, conv)
	assert.Empty(t, checkRules(t, r.log, conv))
}

// onlyCallsOutput sends body as a call of its own conversation, checks
// that replay --verify proves the conversation, and returns the output of
// its only model call, as the calls view shows it.
func onlyCallsOutput(t *testing.T, r *rig, body string) []events.Block {
	t.Helper()
	resp, out := post(t, r.gw.URL+"/v1/chat/completions", map[string]string{"Turnlog-Token": token}, body)
	require.Equal(t, 200, resp.StatusCode, "%s", out)
	conv := resp.Header.Get("Turnlog-Conversation")
	verify(t, r.log, conv)
	page, err := replay.Calls(context.Background(), r.log, conv, replay.Page{})
	require.NoError(t, err)
	require.Len(t, page.Calls, 1)
	return page.Calls[0].Output
}
