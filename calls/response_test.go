package calls

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// benchChatResponse is a Chat Completions answer of about 1 KB, as the
// gateway benchmark's stand-in upstream sends.
var benchChatResponse = []byte(`{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"` +
	strings.Repeat("The answer is in the manual, section four. ", 20) +
	`","refusal":null},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3000,"completion_tokens":150,"total_tokens":3150},"system_fingerprint":"fp_bench"}`)

func BenchmarkParseResponse(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchChatResponse)))
	for b.Loop() {
		if _, err := ParseResponse(ChatCompletions, benchChatResponse); err != nil {
			b.Fatal(err)
		}
	}
}

// chatBlocksJSON is chatBlocks by encoding/json alone: what the scanner
// must agree with.
func chatBlocksJSON(raw []byte) ([]events.Block, error) {
	var m chatMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return chatMessageBlocks(m)
}

var chatResponseSeeds = []string{
	string(benchChatResponse),
	`{"id":"c4","choices":[{"index":0,"message":{"role":"assistant","content":"y"},"logprobs": {"content":[{"token":"y","logprob":-0.1,"bytes":[121],"top_logprobs":[]}],"refusal":null} ,"finish_reason":"stop"}]}`,
	`{"id":"c5","choices":[{"index":0,"message":{"role":"assistant","content":"y"},"logprobs":{"content":[]},"Logprobs":null}]}`,
	`{"id":"c2","choices":[ {"index":0,"message":{"role":"assistant","content":"a"}} , null , {"index":2, "message":{"role":"assistant","content":"c"},"finish_reason":"stop"} ]}`,
	`{"id":"c3","choices":[null,{"index":1,"message":{"role":"assistant","content":"b"}}]}`,
	`{"id":"c1","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	`{"id":"c1","choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}}]},"finish_reason":"tool_calls"}]}`,
	`{"id":"c1","choices":[{"message":{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}}]}`,
	`{"ID":"c1","choices":[]}`,
	`{"id":"c1","choices":[null]}`,
	`{"id":"c1","choices":[{"message":null}]}`,
	`{"id":"c1","choices":[{}]}`,
	`{"id":"c1","choices":null,"error":{"type":"server_error","message":"boom","code":500}}`,
	`{"id":"c1","choices":[{"message":{"role":"assistant","content":"a"}},{"message":{"role":"assistant","content":"b"},"finish_reason":5}]}`,
	`{"id":"c1","id":"c2","choices":[{"message":{"Role":"assistant","content":"x"}}]}`,
	`{"id":"c1","usage":{"prompt_tokens":1},"usage":{"completion_tokens":2},"choices":[{"message":{"role":"assistant","content":"\ud83d\ude00 \u00e9\n"}}]}`,
	`{"id":5}`,
	`{"id":"c1","choices":[{"message":{"role":"assistant","content":"x"}}]} x`,
	`[1,2]`,
	`null`,
}

// FuzzParseChatResponse holds parseChatResponse to what encoding/json
// reads of the same body: the same error or none, and the same output.
func FuzzParseChatResponse(f *testing.F) {
	for _, s := range chatResponseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		got, err := parseChatResponse(body)
		want, wantErr := parseChatResponseJSON(body)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("body %q: error %v, encoding/json's %v", body, err, wantErr)
		}
		if err != nil {
			return
		}
		for i := range want.Items {
			want.Items[i].keys()
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("body %q:\n got %+v\nwant %+v", body, got, want)
		}
	})
}

// FuzzChatBlocks holds chatBlocks to encoding/json's reading of a message
// it has validated (as every caller has).
func FuzzChatBlocks(f *testing.F) {
	for _, s := range []string{
		`{"role":"user","content":"hi"}`,
		`{"role":"tool","tool_call_id":"t1","content":[{"type":"text","text":"r"}]}`,
		`{"role":"assistant","content":"","tool_calls":[{"id":"a","function":{"name":"n","arguments":"{}"}}],"tool_calls":[{"id":"b"}]}`,
		`{"ROLE":"user","content":"x"}`,
		`{"role":null,"content":"x"}`,
		`{"role":"user","content":"\u0000 \\ \" \ud800"}`,
		`{"role":"user","content":{"a":1}}`,
		`{"role":"system","content":null,"name":"n"}`,
		`{"role":"assistant","content":null,"function_call":{"name":"f","arguments":"{}"}}`,
		`{"role":"function","name":"f","content":"42","Name":"g"}`,
		`{"role":"assistant","content":"x","function_call":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		got, err := chatBlocks(raw)
		want, wantErr := chatBlocksJSON(raw)
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("message %q: error %v, encoding/json's %v", raw, err, wantErr)
		}
		if err == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("message %q:\n got %+v\nwant %+v", raw, got, want)
		}
	})
}

// TestResponseOfTheWrongShapeIsSaidInJSONsWords: a logged response whose
// choices is a string was refused with encoding/json's words ("cannot
// unmarshal string into Go struct field .choices of type
// []json.RawMessage"), which name Go's types, not the member at fault.
func TestResponseOfTheWrongShapeIsSaidInJSONsWords(t *testing.T) {
	_, err := ParseResponse(ChatCompletions, []byte(`{"id":"c","object":"chat.completion","model":"m","choices":"none"}`))
	require.Error(t, err)
	assert.Equal(t, `"choices" is a JSON string where an array belongs`, err.Error())
	assert.NotContains(t, err.Error(), "Go struct")
}
