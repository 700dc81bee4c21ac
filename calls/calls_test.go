package calls

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

func TestCanonical(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"member order and spaces", `{ "b": 1, "a": [true, null, "x"] }`, `{"a":[true,null,"x"],"b":1}`},
		{"numbers as ECMAScript writes them", `[1.0, 1e21, 1e-7, 0.000001, 123.456e2, -0, 1E3]`, `[1,1e+21,1e-7,0.000001,12345.6,0,1000]`},
		{"escapes", `"\u0041\u00e9\n\u001f\"\\/"`, "\"Aé\\n\\u001f\\\"\\\\/\""},
		{"utf-16 order", `{"\ud83d\ude00":1,"\ufb33":2}`, "{\"\U0001F600\":1,\"\ufb33\":2}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Canonical([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := Canonical([]byte(`{"a":1} x`))
	assert.Error(t, err)
}

// record plays one call against turn as the gateway does: its input, then
// its output, and returns the events and the bytes they encode to.
func record(t *testing.T, turn *projector.Turn, api API, body string, out *Output) ([]events.Event, int) {
	t.Helper()
	req, err := ParseRequest(api, []byte(body))
	require.NoError(t, err)
	c := &Call{Request: req, Wire: WireSHA256([]byte(body)), Threading: ThreadExplicit}
	in, err := PlanInput(turn, c)
	require.NoError(t, err)
	// What replay --verify does: the Turn renders to the recorded hash.
	st := in[len(in)-1].Payload.(events.InferenceStarted)
	got, err := RenderHash(api, turn.Blocks, turn.Data, st.Gateway["params"])
	require.NoError(t, err)
	require.Equal(t, st.InputHash, got)
	rendered, err := Render(api, turn.Blocks, turn.Data, st.Gateway["params"])
	require.NoError(t, err)
	require.Equal(t, hashCanonical(rendered), got, "RenderHash hashes what Render builds")
	want, _ := Canonical([]byte(body))
	require.Equal(t, hashCanonical(want), st.InputHash, "the input hash is the canonical body's")
	res, err := PlanOutcome(turn, c, Outcome{Output: out, Duration: time.Millisecond})
	require.NoError(t, err)
	all := append(in, res...)
	enc, err := events.Encode(all...)
	require.NoError(t, err)
	return all, len(enc)
}

func types(evs []events.Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type))
	}
	return out
}

func chatOutput(t *testing.T, msg string) *Output {
	o, err := ParseResponse(ChatCompletions, []byte(`{"id":"c1","choices":[{"index":0,"message":`+msg+`,"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":2}}`))
	require.NoError(t, err)
	return o
}

func TestChatConversationStoresWhatIsNew(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"weather","description":"` + strings.Repeat("looks up the weather ", 40) + `","parameters":{"type":"object"}}}]`
	turn := projector.New("c")
	sys := `{"role":"system","content":"be brief"}`
	u1 := `{"role":"user","content":"weather in Paris?"}`
	a1 := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}],"refusal":null}`
	evs, first := record(t, turn, ChatCompletions, `{"model":"m","messages":[`+sys+`,`+u1+`],`+tools+`}`, chatOutput(t, a1))
	assert.Equal(t, []string{"conversation.started", "systemprompt.set", "user.appended", "data.set", "inference.started", "tool.called", "inference.finished"}, types(evs))

	tr := `{"role":"tool","tool_call_id":"call_1","content":"sunny"}`
	evs, second := record(t, turn, ChatCompletions, `{"model":"m","messages":[`+sys+`,`+u1+`,`+a1+`,`+tr+`],`+tools+`}`,
		chatOutput(t, `{"role":"assistant","content":"Sunny."}`))
	assert.Equal(t, []string{"tool.result", "inference.started", "llm_text.appended", "inference.finished"}, types(evs),
		"the second call stores its tool result and output only: the history and the tools are in the Turn already")
	assert.Less(t, second, first/2)

	// A client that flattens its history and sends the system prompt again.
	evs, _ = record(t, turn, ChatCompletions, `{"model":"m","messages":[`+sys+`,`+u1+`,`+a1+`,`+tr+`,{"role":"assistant","content":"Sunny."},`+sys+`,{"role":"user","content":"thanks"}],`+tools+`}`, nil)
	assert.Contains(t, types(evs), "systemprompt.set")
	n := 0
	for _, b := range turn.Blocks {
		if b.Kind == events.KindSystem {
			n++
		}
	}
	assert.Equal(t, 2, n, "the Turn holds the second system prompt, for replay --check to report")
}

func TestChatChangesAreEvents(t *testing.T) {
	turn := projector.New("c")
	record(t, turn, ChatCompletions, `{"model":"m","messages":[{"role":"system","content":"A"},{"role":"user","content":"1"},{"role":"assistant","content":"x"},{"role":"user","content":"2"}]}`, nil)
	for _, tc := range []struct {
		name string
		body string
		want []string
	}{
		{"replaced system prompt", `{"model":"m","messages":[{"role":"system","content":"B"},{"role":"user","content":"1"},{"role":"assistant","content":"x"},{"role":"user","content":"2"}]}`,
			[]string{"systemprompt.replaced", "inference.started", "inference.finished"}},
		{"removed block", `{"model":"m","messages":[{"role":"system","content":"B"},{"role":"user","content":"1"},{"role":"user","content":"2"}]}`,
			[]string{"blocks.removed", "inference.started", "inference.finished"}},
		{"reordered", `{"model":"m","messages":[{"role":"user","content":"1"},{"role":"system","content":"B"},{"role":"user","content":"2"}]}`,
			[]string{"blocks.reordered", "inference.started", "inference.finished"}},
		{"rewritten item", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"1"}]},{"role":"system","content":"B"},{"role":"user","content":"2"}]}`,
			[]string{"block.annotated", "inference.started", "inference.finished"}},
		{"edited block", `{"model":"m","messages":[{"role":"user","content":"1!"},{"role":"system","content":"B"},{"role":"user","content":"2"}]}`,
			[]string{"blocks.removed", "user.appended", "blocks.reordered", "inference.started", "inference.finished"}},
		// The rewritten item is found where it is after the removal
		// before it, not where it was matched.
		{"removed, then rewritten", `{"model":"m","messages":[{"role":"system","content":"B"},{"role":"user","content":[{"type":"text","text":"2"}]}]}`,
			[]string{"blocks.removed", "block.annotated", "inference.started", "inference.finished"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evs, _ := record(t, turn, ChatCompletions, tc.body, nil)
			assert.Equal(t, tc.want, types(evs))
		})
	}
}

func TestResponsesReasoningRoundTrip(t *testing.T) {
	turn := projector.New("c")
	out := `{"id":"resp_1","status":"completed","output":[{"id":"rs_1","type":"reasoning","summary":[{"type":"summary_text","text":"think"}],"encrypted_content":"gAAAA+opaque=="},{"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"f","arguments":"{}"}],"usage":{"input_tokens":3,"output_tokens":4}}`
	o, err := ParseResponse(Responses, []byte(out))
	require.NoError(t, err)
	record(t, turn, Responses, `{"model":"m","store":false,"include":["reasoning.encrypted_content"],"instructions":"sys","input":"hi"}`, o)
	var items struct {
		Output []json.RawMessage `json:"output"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &items))
	body := `{"model":"m","store":false,"include":["reasoning.encrypted_content"],"instructions":"sys","input":[{"role":"user","content":"hi"},` +
		string(items.Output[0]) + `,` + string(items.Output[1]) + `,{"type":"function_call_output","call_id":"call_1","output":"42"}]}`
	evs, _ := record(t, turn, Responses, body, nil)
	assert.Equal(t, []string{"block.annotated", "tool.result", "inference.started", "inference.finished"}, types(evs),
		"the user's input changed form (a string, then a message), the reasoning and call came back as issued")
	var enc string
	for _, b := range turn.Blocks {
		if b.Kind == events.KindReasoning {
			enc = b.Encrypted
		}
	}
	assert.Equal(t, "gAAAA+opaque==", enc)
}

func TestThreads(t *testing.T) {
	ctx := context.Background()
	x := NewThreads(NewMemStore(100))
	a := []events.Block{{Kind: events.KindUser, Text: "hi"}, {Kind: events.KindLLMText, Text: "hello"}}
	require.NoError(t, x.Record(ctx, "A", 5, "", a, nil, Answer{ResponseID: "resp_1"}))
	_, _, ok, err := x.Find(ctx, "", a[:1], nil)
	require.NoError(t, err)
	assert.False(t, ok, "a call equal to another's first input starts its own conversation")
	ref, latest, ok, err := x.Find(ctx, "", append(a, events.Block{Kind: events.KindUser, Text: "more"}), nil)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Ref{"A", 5}, ref)
	assert.True(t, latest)
	require.NoError(t, x.Record(ctx, "A", 9, "", append(a, events.Block{Kind: events.KindUser, Text: "more"}, events.Block{Kind: events.KindLLMText, Text: "ok"}), nil, Answer{}))
	ref, latest, ok, err = x.Find(ctx, "", append(a, events.Block{Kind: events.KindUser, Text: "other"}), nil)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, Ref{"A", 5}, ref)
	assert.False(t, latest, "an earlier state of A: a fork")
	ref, latest, ok, err = x.Response(ctx, "resp_1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, Ref{"A", 5}, ref, "where the response left A")
	assert.False(t, latest, "A went on since: a call naming it branches")

	// An entry from before positions were kept names the conversation
	// alone: the call continues it, as it did.
	require.NoError(t, x.store.Put(ctx, map[string]string{responseKey("resp_old"): "A"}))
	ref, latest, ok, err = x.Response(ctx, "resp_old")
	require.NoError(t, err)
	assert.True(t, ok && latest)
	assert.Equal(t, Ref{"A", -1}, ref)
}

func TestStreams(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    API
		stream string
		want   []events.Block
	}{
		{"chat", ChatCompletions, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"He\"}}]}\n\n" +
			"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"y\",\"tool_calls\":[{\"index\":0,\"id\":\"c\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"a\\\"\"}}]}}]}\n\n" +
			"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":1}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\ndata: [DONE]\n\n",
			[]events.Block{{Kind: events.KindLLMText, Text: "Hey"}, {Kind: events.KindToolCall, CallID: "c", ToolName: "f", Arguments: `{"a":1}`, Meta: map[string]string{MetaPart: "1"}}}},
		{"messages", Messages, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":3}}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"hmm\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"SIG\"}}\n\n" +
			"event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n" +
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"ok\"}}\n\n" +
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":4}}\n\n" +
			"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
			[]events.Block{{Kind: events.KindReasoning, Text: "hmm", Encrypted: "SIG"}, {Kind: events.KindLLMText, Text: "ok", Meta: map[string]string{MetaPart: "1"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStream(tc.api, 1<<20)
			// In pieces that split lines, as a network does.
			for i := 0; i < len(tc.stream); i += 7 {
				s.Write([]byte(tc.stream[i:min(i+7, len(tc.stream))]))
			}
			assert.True(t, s.Done())
			o, err := s.Output()
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.Blocks())
			assert.Empty(t, o.Error)
		})
	}
}

// A 200-call conversation whose client re-sends its whole history stores
// at most 1/20 of what its request bodies add up to.
func TestLogBytesOfALongConversation(t *testing.T) {
	turn := projector.New("c")
	msgs := []string{`{"role":"system","content":"` + strings.Repeat("You are a careful assistant. ", 20) + `"}`}
	var requestBytes, logBytes int
	for i := range 200 {
		msgs = append(msgs, `{"role":"user","content":"question `+strings.Repeat("q", 200)+string(rune('a'+i%26))+`"}`)
		body := `{"model":"m","temperature":0.2,"messages":[` + strings.Join(msgs, ",") + `]}`
		answer := `{"role":"assistant","content":"answer ` + strings.Repeat("a", 300) + `"}`
		_, n := record(t, turn, ChatCompletions, body, chatOutput(t, answer))
		requestBytes += len(body)
		logBytes += n
		msgs = append(msgs, answer)
	}
	t.Logf("request bytes %d, log bytes %d (1/%d)", requestBytes, logBytes, requestBytes/logBytes)
	assert.LessOrEqual(t, logBytes*20, requestBytes)
}

// A request's scope is the end user it names, however long: one past what
// the providers take is kept as its hash, so that a hostile value cannot
// swell the record.
func TestScopeOfARequest(t *testing.T) {
	for _, tc := range []struct {
		api  API
		body string
		want string
	}{
		{ChatCompletions, `{"model":"m","user":"ada","messages":[]}`, "ada"},
		{ChatCompletions, `{"model":"m","user":"ada","safety_identifier":"u-1","messages":[]}`, "u-1"},
		{Responses, `{"model":"m","user":null,"input":"hi"}`, ""},
		{Responses, `{"model":"m","user":42,"input":"hi"}`, ""},
		{Messages, `{"model":"c","max_tokens":1,"metadata":{"user_id":"ada"},"messages":[]}`, "ada"},
		{Messages, `{"model":"c","max_tokens":1,"user":"ada","messages":[]}`, ""},
	} {
		req, err := ParseRequest(tc.api, []byte(tc.body))
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.want, req.Scope, tc.body)
	}
	long := strings.Repeat("x", 10000)
	req, err := ParseRequest(ChatCompletions, []byte(`{"model":"m","user":"`+long+`","messages":[]}`))
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(req.Scope, "sha256:"), req.Scope)
	assert.Len(t, req.Scope, len("sha256:")+64)
}

// IndexedKeys finds the state a call left by its key now (tool arguments
// as JSON) and, where it differs, by its key before that change, so that
// erasing a conversation recorded by an earlier version leaves none of its
// entries.
func TestIndexedKeysFindStatesOfBothKeyForms(t *testing.T) {
	for _, tc := range []struct {
		args   string
		legacy bool
	}{{`{"city":"Paris"}`, false}, {`{"city": "Paris"}`, true}} {
		user := events.Block{ID: "u1", Kind: events.KindUser, Text: "weather?"}
		call := events.Block{ID: "t1", Kind: events.KindToolCall, CallID: "call_1", ToolName: "weather", Arguments: tc.args}
		evs := []events.Event{
			events.New("c", "op", 0, "app", events.UserAppended{BlockID: user.ID, Text: user.Text}),
			events.New("c", "call", 0, Actor, events.InferenceStarted{InferenceID: "call", InputHash: "jcs:x", Blocks: 1, Gateway: map[string]string{"api": "chat.completions"}}),
			events.New("c", "call", 1, Actor, events.ToolCalled{BlockID: call.ID, CallID: call.CallID, Name: call.ToolName, Arguments: call.Arguments}),
			events.New("c", "call", 1, Actor, events.InferenceFinished{InferenceID: "call"}),
		}
		keys, err := IndexedKeys("c", func(yield func(events.Event, error) bool) {
			for _, e := range evs {
				if !yield(e, nil) {
					return
				}
			}
		})
		require.NoError(t, err)
		blocks := []events.Block{user, call}
		now := stateKey(Chain(blocks)[1])
		raw := [][32]byte{legacyKey(&blocks[0]), legacyKey(&blocks[1])}
		before := stateKey(chainOf("", blocks, raw)[1])
		assert.Contains(t, keys, now, tc.args)
		if tc.legacy {
			assert.NotEqual(t, now, before)
			assert.Contains(t, keys, before, "the key of the state as an earlier version recorded it: %s", tc.args)
		} else {
			assert.Equal(t, now, before, "canonical arguments: one key")
		}
	}
}
