package cli

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// A logged chat: a first call answered with a tool call, its continuation
// with the tool's result, and a fork of the first call's state with
// another result; plus a call of a named conversation in the Messages API.
const (
	callSys     = `{"role":"system","content":"You answer about weather."},{"role":"user","content":"Weather in Paris?"}`
	callAsk     = `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}}]}`
	callAskResp = `{"id":"chatcmpl-1","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":` + callAsk + `,"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":20,"completion_tokens":9}}`
)

func callLine(at, conv, api, req, resp string) string {
	line := `{"api":"` + api + `","time":"` + at + `",`
	if conv != "" {
		line += `"conversation":"` + conv + `",`
	}
	return line + `"request":` + req + `,"response":` + resp + `}`
}

func chatReq(msgs string) string { return `{"model":"gpt-x","messages":[` + msgs + `]}` }

func chatResp(text string) string {
	return `{"id":"chatcmpl-2","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"` + text + `"},"finish_reason":"stop"}],"usage":{"prompt_tokens":30,"completion_tokens":4}}`
}

func TestImportCalls(t *testing.T) {
	e := newAuditEnv(t, false)
	ctx := context.Background()
	lines := []string{
		callLine("2025-03-01T10:00:00Z", "", "chat.completions", chatReq(callSys), callAskResp),
		// The fork comes later in time, earlier in the file: calls are
		// recorded in time order.
		callLine("2025-03-01T10:05:00Z", "", "chat.completions", chatReq(callSys+`,`+callAsk+`,{"role":"tool","tool_call_id":"call_1","content":"rainy"}`), chatResp("Rainy.")),
		callLine("2025-03-01T10:01:00Z", "", "chat.completions", chatReq(callSys+`,`+callAsk+`,{"role":"tool","tool_call_id":"call_1","content":"sunny"}`), chatResp("Sunny.")),
		"",
		callLine("2025-03-01T12:00:00+01:00", "anthropic-chat", "messages", `{"model":"claude-x","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}]}`,
			`{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}`),
	}
	file := e.file("calls.jsonl", strings.Join(lines, "\n")+"\n")

	out, errOut, code := e.run("", "import", "--calls", file, "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res []gateway.Imported
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	require.Len(t, res, 4)
	assert.Equal(t, []int{1, 3, 2, 5}, []int{res[0].Line, res[1].Line, res[2].Line, res[3].Line}, "recorded in time order")
	chat, cont, fork, named := res[0].Conversation, res[1].Conversation, res[2].Conversation, res[3].Conversation
	assert.Equal(t, chat, cont, "the continuation is threaded into the chat")
	assert.Equal(t, "inferred", res[1].Threading)
	assert.NotEqual(t, chat, fork)
	assert.Equal(t, "anthropic-chat", named)
	assert.Equal(t, "explicit", res[3].Threading)

	var started []events.Event
	for r, err := range e.log.Events(ctx, chat) {
		require.NoError(t, err)
		if _, ok := r.Event.Payload.(events.InferenceStarted); ok {
			started = append(started, r.Event)
		}
	}
	require.Len(t, started, 2)
	assert.Equal(t, time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC), started[0].Time, "recorded at the logged time")
	assert.Equal(t, time.Date(2025, 3, 1, 10, 1, 0, 0, time.UTC), started[1].Time)
	var first events.Event
	for r, err := range e.log.Events(ctx, fork) {
		require.NoError(t, err)
		first = r.Event
		break
	}
	start, ok := first.Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, chat, start.ForkedFrom, "the other result forks the chat at its first call")
	for _, conv := range []string{chat, fork, named} {
		v, err := replay.Verify(ctx, e.log, conv)
		require.NoError(t, err)
		assert.True(t, v.OK(), "replay --verify %s: %+v", conv, v.Mismatches)
	}

	t.Run("importing the file again records nothing new", func(t *testing.T) {
		counts := func() map[string]int {
			n := map[string]int{}
			for _, conv := range []string{chat, fork, named} {
				for _, err := range e.log.Events(ctx, conv) {
					require.NoError(t, err)
					n[conv]++
				}
			}
			return n
		}
		before := counts()
		out, errOut, code := e.run("", "import", "--calls", file)
		require.Equal(t, 0, code, errOut)
		assert.Equal(t, 4, strings.Count(out, "unchanged: this call was imported before"), out)
		assert.Contains(t, out, ":1: unchanged: this call was imported before, into "+chat)
		assert.Equal(t, before, counts(), "no event added")

		// One more call in the file: only it is recorded, and it continues the chat.
		more := e.file("more.jsonl", strings.Join(append(lines,
			callLine("2025-03-01T10:02:00Z", "", "chat.completions",
				chatReq(callSys+`,`+callAsk+`,{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"assistant","content":"Sunny."},{"role":"user","content":"Thanks"}`),
				chatResp("You're welcome."))), "\n")+"\n")
		out, errOut, code = e.run("", "import", "--calls", more, "-o", "json")
		require.Equal(t, 0, code, errOut)
		var again []gateway.Imported
		require.NoError(t, json.Unmarshal([]byte(out), &again))
		recorded := 0
		for _, r := range again {
			if r.Status == gateway.StatusRecorded {
				recorded++
				assert.Equal(t, 6, r.Line)
				assert.Equal(t, chat, r.Conversation)
			}
		}
		assert.Equal(t, 1, recorded, "%s", out)
	})

	t.Run("an erased conversation's calls are imported again", func(t *testing.T) {
		got, err := e.log.Erase(ctx, named)
		require.NoError(t, err)
		assert.Equal(t, 3, got.Threading, "the imported call's entry, its state and the latest-call entry")
		out, errOut, code := e.run("", "import", "--calls", file)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, ":5: recorded in "+named)
		assert.Equal(t, 3, strings.Count(out, "unchanged"), out)
	})

	t.Run("a bad line imports nothing", func(t *testing.T) {
		bad := e.file("bad.jsonl", strings.Join([]string{
			callLine("2025-03-02T10:00:00Z", "good-one", "chat.completions", chatReq(`{"role":"user","content":"hi"}`), chatResp("Hello.")),
			callLine("yesterday", "", "chat.completions", chatReq(`{"role":"user","content":"hi"}`), chatResp("Hello.")),
			callLine("2025-03-02T10:00:00Z", "", "chat.completions", `{"model":"m","messages":"not a list"}`, chatResp("x")),
			`{"api":"chat.completions","time":"2025-03-02T10:00:00Z","request":` + chatReq(`{"role":"user","content":"hi"}`) + `,"response":{"trunc`,
		}, "\n"))
		_, errOut, code := e.run("", "import", "--calls", bad)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "nothing imported")
		assert.Contains(t, errOut, `line 2: "time" "yesterday" is not RFC 3339`)
		assert.Contains(t, errOut, `line 3: "request" is not a chat.completions request`)
		assert.Contains(t, errOut, `line 4: not a logged call`)
		assert.NotContains(t, errOut, "line 1:")
		seq, err := e.log.LastSeq(ctx, "good-one")
		require.NoError(t, err)
		assert.Zero(t, seq, "the good line was not recorded either")
	})
}

// TestImportCallsCompaction: a logged compaction ("compact": true) is
// recorded as the gateway records one: the calls before and after it are
// one conversation, which goes on from the compacted items.
func TestImportCallsCompaction(t *testing.T) {
	e := newAuditEnv(t, false)
	msg := func(role, text string) string {
		return `{"role":"` + role + `","content":"` + text + `"}`
	}
	out := func(i int) string {
		return `{"type":"message","id":"msg_` + strconv.Itoa(i) + `","status":"completed","role":"assistant","content":[{"type":"output_text","text":"answer ` + strconv.Itoa(i) + `","annotations":[]}]}`
	}
	resp := func(i int, items string) string {
		return `{"id":"resp_` + strconv.Itoa(i) + `","object":"response","created_at":1,"status":"completed","model":"m","output":[` + items + `]}`
	}
	req := func(items ...string) string {
		return `{"model":"m","instructions":"Be brief.","store":false,"input":[` + strings.Join(items, ",") + `]}`
	}
	cmp := `{"type":"compaction","id":"cmp_3","encrypted_content":"ENC"}`
	kept := `{"type":"message","role":"user","content":[{"type":"input_text","text":"one"}]}`
	compact := callLine("2025-03-01T10:02:00Z", "", "responses", req(msg("user", "one"), out(1), msg("user", "two"), out(2)),
		`{"id":"resp_3","object":"response.compaction","created_at":1,"output":[`+kept+`,`+cmp+`]}`)
	compact = strings.Replace(compact, `{"api":"responses",`, `{"api":"responses","compact":true,`, 1)
	lines := []string{
		callLine("2025-03-01T10:00:00Z", "", "responses", req(msg("user", "one")), resp(1, out(1))),
		callLine("2025-03-01T10:01:00Z", "", "responses", req(msg("user", "one"), out(1), msg("user", "two")), resp(2, out(2))),
		compact,
		callLine("2025-03-01T10:03:00Z", "", "responses", req(kept, cmp, msg("user", "three")), resp(4, out(4))),
	}
	o, errOut, code := e.run("", "import", "--calls", e.file("calls.jsonl", strings.Join(lines, "\n")+"\n"), "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res []gateway.Imported
	require.NoError(t, json.Unmarshal([]byte(o), &res))
	require.Len(t, res, 4)
	for _, r := range res {
		assert.Equal(t, res[0].Conversation, r.Conversation, "line %d", r.Line)
	}
	turn, err := e.log.Load(context.Background(), res[0].Conversation)
	require.NoError(t, err)
	var texts []string
	for _, b := range turn.Blocks {
		texts = append(texts, b.Text)
	}
	assert.Equal(t, []string{"Be brief.", "one", "", "three", "answer 4"}, texts)
	_, errOut, code = e.run("", "replay", "--verify", res[0].Conversation)
	assert.Equal(t, 0, code, errOut)
}

// TestImportCallsTooLargeToStore: a line whose call adds more than one
// NATS message holds stopped the import at that line ("step too large"),
// the lines after it never imported. It is recorded as the gateway
// records such a call, by its hash alone, and the output says so; the
// other lines are imported.
func TestImportCallsTooLargeToStore(t *testing.T) {
	const payload = 64 << 10
	srv := natstest.Start(t, natstest.WithMaxPayload(payload))
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	e := &auditEnv{t: t, url: srv.ClientURL(), log: l}
	big := strings.Repeat("x", 2*payload)
	file := e.file("calls.jsonl", strings.Join([]string{
		callLine("2025-03-01T10:00:00Z", "small-a", "chat.completions", chatReq(`{"role":"user","content":"hi"}`), chatResp("Hello.")),
		callLine("2025-03-01T10:01:00Z", "large", "chat.completions", chatReq(`{"role":"user","content":"`+big+`"}`), chatResp("Long.")),
		callLine("2025-03-01T10:02:00Z", "small-b", "chat.completions", chatReq(`{"role":"user","content":"hi"}`), chatResp("Hello.")),
	}, "\n")+"\n")

	out, errOut, code := e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, ":1: recorded in small-a")
	assert.Contains(t, out, ":3: recorded in small-b", "the line after the large one is imported")
	assert.Contains(t, out, ":2: recorded in large (explicit) by its hash alone: its new content is too large to store")

	var started []events.InferenceStarted
	for r, err := range l.Events(context.Background(), "large") {
		require.NoError(t, err)
		if s, ok := r.Event.Payload.(events.InferenceStarted); ok {
			started = append(started, s)
		}
	}
	require.Len(t, started, 1)
	assert.Contains(t, started[0].Gateway["unparsed"], "too large to store")
	assert.NotEmpty(t, started[0].Gateway["wire_sha256"])
}

// TestImportCallsCutStream: a logged stream cut before its final event
// made the whole file unimportable ("nothing imported ... the stream ended
// before its final event"), though the gateway records the same call live
// as failed (found by the audit probe). It is recorded as failed, as the
// gateway records it, and the file's other lines are imported.
func TestImportCallsCutStream(t *testing.T) {
	e := newAuditEnv(t, false)
	cut := `"data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Half an ans\"}}]}\n\n"`
	lines := []string{
		callLine("2025-03-01T10:00:00Z", "cut", "chat.completions", `{"model":"gpt-x","stream":true,"messages":[{"role":"user","content":"Hi"}]}`, cut),
		callLine("2025-03-01T10:01:00Z", "whole", "chat.completions", chatReq(`{"role":"user","content":"Hi"}`), chatResp("Hello.")),
	}
	file := e.file("cut.jsonl", strings.Join(lines, "\n")+"\n")
	out, errOut, code := e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "cut")
	assert.Contains(t, out, "whole")

	out, errOut, _ = e.run("", "replay", "cut")
	assert.Contains(t, out, "the stream ended before its final event", errOut)
}

// TestImportCallsRefusesAnOlderCallIntoALaterConversation: a logged call
// dated before the last event of the conversation it names was appended
// after it all the same, at its own time: the conversation's times ran
// backwards, ls gave the old call's time as its last activity, and the
// check found history rewritten. Such a line is refused, saying why and
// what to do, and nothing of it is stored.
func TestImportCallsRefusesAnOlderCallIntoALaterConversation(t *testing.T) {
	e := newAuditEnv(t, false)
	ctx := context.Background()
	live := e.file("live.jsonl", callLine("2026-11-29T08:00:00Z", "imp-1", "chat.completions", chatReq(callSys), chatResp("Sunny."))+"\n")
	_, errOut, code := e.run("", "import", "--calls", live)
	require.Equal(t, 0, code, errOut)
	before, err := e.log.LastSeq(ctx, "imp-1")
	require.NoError(t, err)

	old := e.file("old.jsonl", callLine("2024-01-01T00:00:00Z", "imp-1", "chat.completions", chatReq(`{"role":"user","content":"an old question"}`), chatResp("Old."))+"\n")
	_, errOut, code = e.run("", "import", "--calls", old)
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "line 1")
	assert.Contains(t, errOut, "the call's time 2024-01-01T00:00:00Z is before the last event of conversation imp-1 (2026-11-29T08:00:00Z)")
	assert.Contains(t, errOut, `leave "conversation" out`)
	after, err := e.log.LastSeq(ctx, "imp-1")
	require.NoError(t, err)
	assert.Equal(t, before, after, "nothing stored")
}
