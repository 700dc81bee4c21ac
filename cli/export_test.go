package cli

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

func TestExportImportExportCommands(t *testing.T) {
	ctx := context.Background()
	src := newAuditEnv(t, true)
	src.ask("conv1", "hello")
	src.ask("conv1", "count the words in one two three")
	dst := newAuditEnv(t, false)

	exported, errOut, code := src.run("", "export", "conv1")
	require.Equal(t, 0, code, errOut)
	var chat replay.Chat
	require.NoError(t, json.Unmarshal([]byte(exported), &chat))
	assert.Equal(t, "conv1", chat.ID)
	require.NotEmpty(t, chat.Messages)
	assert.Equal(t, replay.RoleSystem, chat.Messages[0].Role, "the system message comes first")
	systems, tools := 0, 0
	for _, m := range chat.Messages {
		if m.Role == replay.RoleSystem {
			systems++
		}
		if m.Role == replay.RoleTool {
			tools++
			assert.NotEmpty(t, m.ToolCallID)
		}
	}
	assert.Equal(t, 1, systems, "and exactly once")
	assert.Equal(t, 1, tools)
	assert.Equal(t, map[string]string{"tz": "UTC"}, chat.Metadata)
	assert.False(t, chat.CreatedAt.IsZero())
	assert.True(t, chat.UpdatedAt.After(chat.CreatedAt))
	file := src.file("conv1.json", exported)

	out, errOut, code := dst.run("", "import", file)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "imported as conv1")
	again, errOut, code := dst.run("", "export", "conv1")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, exported, again, "export -> import -> export is identical")

	t.Run("importing again changes nothing", func(t *testing.T) {
		seq, err := dst.log.LastSeq(ctx, "conv1")
		require.NoError(t, err)
		out, errOut, code := dst.run("", "import", file)
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, out, "conv1 unchanged")
		after, err := dst.log.LastSeq(ctx, "conv1")
		require.NoError(t, err)
		assert.Equal(t, seq, after)
	})
	t.Run("a bad file imports nothing", func(t *testing.T) {
		good := dst.file("good.json", strings.Replace(exported, `"id": "conv1"`, `"id": "conv2"`, 1))
		bad := dst.file("bad.json", `{"id": "conv3", "messages": [{"role": "wizard", "content": "x"}]}`)
		_, errOut, code := dst.run("", "import", good, bad)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, bad)
		assert.Contains(t, errOut, `role "wizard" is not supported`)
		assert.Contains(t, errOut, "nothing imported")
		for _, conv := range []string{"conv2", "conv3"} {
			seq, err := dst.log.LastSeq(ctx, conv)
			require.NoError(t, err)
			assert.Zero(t, seq, "%s was imported", conv)
		}
		_, errOut, code = dst.run("", "import", filepath.Join(t.TempDir(), "none.json"))
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "no such file")
	})
	t.Run("a conversation of other origin is refused", func(t *testing.T) {
		_, errOut, code := src.run("", "import", file)
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "conv1 was started by request")
	})
	t.Run("json", func(t *testing.T) {
		out, _, code := dst.run("", "import", file, "-o", "json")
		require.Equal(t, 0, code)
		var res []replay.ImportResult
		require.NoError(t, json.Unmarshal([]byte(out), &res))
		assert.Equal(t, replay.StatusUnchanged, res[0].Status)
	})
	t.Run("format turn is what diff-turns reads", func(t *testing.T) {
		turn, errOut, code := src.run("", "export", "conv1", "--format", "turn")
		require.Equal(t, 0, code, errOut)
		assert.Contains(t, turn, `"blocks"`)
		_, errOut, code = src.run("", "diff-turns", src.file("turn.json", turn), "conv1")
		assert.Equal(t, 0, code, errOut)
	})
	t.Run("errors", func(t *testing.T) {
		_, errOut, code := src.run("", "export", "conv1", "--format", "csv")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "use openai or turn")
		_, errOut, code = src.run("", "export", "nobody")
		assert.Equal(t, 2, code)
		assert.Contains(t, errOut, "no events")
	})
}

func TestForkCommand(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, true)
	e.ask("base", "hello")
	e.ask("base", "again")

	out, errOut, code := e.run("", "fork", "base@4", "what-if")
	require.Equal(t, 0, code, errOut)
	assert.Equal(t, "forked base@4 into what-if (", out[:len("forked base@4 into what-if (")])
	want, err := e.log.LoadAt(ctx, "base", 4)
	require.NoError(t, err)
	got, err := e.log.Load(ctx, "what-if")
	require.NoError(t, err)
	assert.Equal(t, want.Blocks, got.Blocks)
	tl, err := replay.Timeline(ctx, e.log, "what-if")
	require.NoError(t, err)
	require.Len(t, tl.Events, 1)
	assert.Equal(t, "conversation.started", string(tl.Events[0].Type))
	assert.Contains(t, tl.Events[0].Summary, "forked from base@4")

	// The fork is a conversation like any other.
	e.ask("what-if", "and then?")
	_, _, code = e.run("", "replay", "what-if", "--verify")
	assert.Equal(t, 0, code)

	out, _, code = e.run("", "fork", "base", "-o", "json")
	require.Equal(t, 0, code)
	var f replay.Forked
	require.NoError(t, json.Unmarshal([]byte(out), &f))
	assert.Len(t, f.Conversation, 26, "a generated ULID")
	assert.Equal(t, "base", f.From)

	for _, args := range [][]string{
		{"fork", "base@2", "what-if"},
		{"fork", "base@0"},
		{"fork", "base@x"},
		{"fork", "base@99"},
		{"fork", "nobody"},
		{"fork", "base", "bad.id"},
	} {
		_, errOut, code := e.run("", args...)
		assert.Equal(t, 2, code, "%v", args)
		assert.NotEmpty(t, errOut, "%v", args)
	}
}

// TestExportSaysWhatTheShapeCannotCarry: chat messages JSON has no place
// for encrypted reasoning or an image; export leaves them out, and says so
// on stderr, naming the blocks, instead of dropping them without a word.
func TestExportSaysWhatTheShapeCannotCarry(t *testing.T) {
	e := newAuditEnv(t, false)
	req := `{"model":"claude-x","max_tokens":100,"messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}}]}]}`
	resp := `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"A picture.","signature":"EqQBsig"},{"type":"redacted_thinking","data":"EmwKdata"},{"type":"text","text":"A PNG."}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":2}}`
	file := e.file("calls.jsonl", callLine("2025-03-01T10:00:00Z", "pic", "messages", req, resp)+"\n")
	_, errOut, code := e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)

	out, errOut, code := e.run("", "export", "pic")
	require.Equal(t, 0, code, errOut)
	var chat replay.Chat
	require.NoError(t, json.Unmarshal([]byte(out), &chat), "stdout stays the JSON alone")
	assert.Contains(t, errOut, "3 blocks hold what chat messages JSON cannot carry")
	assert.Contains(t, errOut, "image")
	assert.Contains(t, errOut, "redacted_thinking")
	assert.Contains(t, errOut, "signature")
	assert.Contains(t, errOut, "--format turn keeps them")

	// OpenAI's shape: an image part, a name and a refusal, which the
	// gateway keeps as the items were sent (gateway.item).
	req = chatReq(`{"role":"user","name":"alice","content":[{"type":"text","text":"And this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}`)
	resp = `{"id":"chatcmpl-9","object":"chat.completion","model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}]}`
	file = e.file("calls2.jsonl", callLine("2025-03-01T10:00:00Z", "pic2", "chat.completions", req, resp)+"\n")
	_, errOut, code = e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)
	_, errOut, code = e.run("", "export", "pic2")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, errOut, "image_url")
	assert.Contains(t, errOut, "name")
	assert.Contains(t, errOut, "refusal")

	_, errOut, code = e.run("", "export", "--format", "turn", "pic")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "cannot carry", "the Turn carries everything")
}

// TestExportCarriesAToolCallsName: a Responses tool loop's function_call
// item, sent back as the app sent it, holds its tool's name, which chat
// messages JSON carries (as function.name); export said "1 block hold
// what chat messages JSON cannot carry ... the item as the app sent it
// holds name" all the same.
func TestExportCarriesAToolCallsName(t *testing.T) {
	e := newAuditEnv(t, false)
	call := `{"type":"function_call","id":"fc_1","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}","status":"completed"}`
	req1 := `{"model":"gpt-x","input":[{"role":"user","content":"Weather in Paris?"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	resp1 := `{"id":"resp_1","object":"response","created_at":1,"status":"completed","model":"gpt-x","output":[` + call + `],"usage":{"input_tokens":5,"output_tokens":2,"total_tokens":7}}`
	req2 := `{"model":"gpt-x","input":[{"role":"user","content":"Weather in Paris?"},` + call + `,{"type":"function_call_output","call_id":"call_1","output":"sunny"}],"tools":[{"type":"function","name":"get_weather","parameters":{"type":"object"}}]}`
	resp2 := `{"id":"resp_2","object":"response","created_at":2,"status":"completed","model":"gpt-x","output":[{"type":"message","id":"msg_2","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Sunny.","annotations":[]}]}],"usage":{"input_tokens":9,"output_tokens":2,"total_tokens":11}}`
	file := e.file("calls.jsonl", callLine("2025-03-01T10:00:00Z", "tools", "responses", req1, resp1)+"\n"+callLine("2025-03-01T10:00:05Z", "tools", "responses", req2, resp2)+"\n")
	_, errOut, code := e.run("", "import", "--calls", file)
	require.Equal(t, 0, code, errOut)

	out, errOut, code := e.run("", "export", "tools")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "cannot carry", "the tool's name is carried")
	assert.Contains(t, out, `"name": "get_weather"`)
}
