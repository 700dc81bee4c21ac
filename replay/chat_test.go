package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

func TestChatFromTurn(t *testing.T) {
	tr := &projector.Turn{Conversation: "c", Data: map[string]string{"tz": "UTC"}, Blocks: []events.Block{
		{ID: "ctx", Kind: events.KindUser, Text: "profile: likes tea", Meta: map[string]string{events.MetaSection: "user_context"}},
		{ID: "s1", Kind: events.KindSystem, Text: "be brief", Trust: events.Trusted},
		{ID: "g", Kind: events.KindSystem, Text: "global policy"},
		{ID: "u1", Kind: events.KindUser, Text: "count a b"},
		{ID: "r1", Kind: events.KindReasoning, Text: "use the tool"},
		{ID: "c1", Kind: events.KindToolCall, CallID: "call_1", ToolName: "word_count", Arguments: `{"text":"a b"}`},
		{ID: "t1", Kind: events.KindToolResult, CallID: "call_1", Text: "2"},
		{ID: "enc", Kind: events.KindReasoning, Encrypted: "opaque"},
		{ID: "l1", Kind: events.KindLLMText, Text: "There are 2."},
		{ID: "l2", Kind: events.KindLLMText, Text: "Anything else?"},
		{ID: "sum", Kind: events.KindOther, Text: "earlier: hello"},
	}}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	c := replay.ChatFromTurn(tr, "gpt-x", at, at.Add(time.Minute))
	got, err := json.Marshal(c)
	require.NoError(t, err)
	want := `{"id":"c","model":"gpt-x","messages":[` +
		`{"role":"system","content":"be brief"},` +
		`{"role":"user","content":"profile: likes tea"},` +
		`{"role":"developer","content":"global policy"},` +
		`{"role":"user","content":"count a b"},` +
		`{"role":"assistant","content":null,"reasoning_content":"use the tool","tool_calls":[{"id":"call_1","type":"function","function":{"name":"word_count","arguments":"{\"text\":\"a b\"}"}}]},` +
		`{"role":"tool","content":"2","tool_call_id":"call_1"},` +
		`{"role":"assistant","content":"There are 2.\n\nAnything else?\n\n[summary] earlier: hello"}],` +
		`"created_at":"2026-01-02T03:04:05.000000006Z","updated_at":"2026-01-02T03:04:05.000000006Z","metadata":{"tz":"UTC"}}`
	want = strings.Replace(want, `"updated_at":"2026-01-02T03:04:05.000000006Z"`, `"updated_at":"2026-01-02T03:05:05.000000006Z"`, 1)
	assert.JSONEq(t, want, string(got))

	var systems int
	for _, m := range c.Messages {
		if m.Role == replay.RoleSystem {
			systems++
		}
	}
	assert.Equal(t, 1, systems, "the system message comes once")

	empty := replay.ChatFromTurn(projector.New("e"), "", at, at)
	data, err := json.Marshal(empty)
	require.NoError(t, err)
	assert.Contains(t, string(data), `"messages":[]`)
	assert.Contains(t, string(data), `"metadata":{}`)
}

func TestParseChat(t *testing.T) {
	ok := func(msgs string) string {
		return `{"id":"c1","model":"m","messages":[` + msgs + `],"created_at":"2026-01-02T03:04:05Z","updated_at":"2026-01-02T03:04:06Z","metadata":{}}`
	}
	t.Run("valid", func(t *testing.T) {
		c, err := replay.ParseChat([]byte(ok(`{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},` +
			`{"role":"assistant","content":null,"tool_calls":[{"id":"x","function":{"name":"f","arguments":"{}"}}]},` +
			`{"role":"tool","tool_call_id":"x","content":"r"}`)))
		require.NoError(t, err)
		require.Len(t, c.Messages, 3)
		assert.Equal(t, "ab", *c.Messages[0].Content)
		assert.Nil(t, c.Messages[1].Content)
		assert.Equal(t, "function", c.Messages[1].ToolCalls[0].Type)
		assert.Equal(t, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), c.CreatedAt)
	})
	t.Run("non-string metadata keeps its JSON", func(t *testing.T) {
		c, err := replay.ParseChat([]byte(`{"id":"c","messages":[],"metadata":{"n":1,"o":{"a":[1, 2]},"s":"x","z":null}}`))
		require.NoError(t, err)
		assert.Equal(t, map[string]string{"n": "1", "o": `{"a":[1,2]}`, "s": "x"}, c.Metadata)
	})
	tests := []struct {
		name, data, want string
	}{
		{name: "not JSON", data: `{"id":`, want: "not a chat file"},
		{name: "two values", data: `{"messages":[]} {}`, want: "more than one JSON value"},
		{name: "no messages", data: `{"id":"c"}`, want: `no "messages" array`},
		{name: "unknown field", data: `{"messages":[],"title":"x"}`, want: `unknown field "title"`},
		{name: "unknown message field", data: ok(`{"role":"user","content":"a","name":"bob"}`), want: `unknown field "name"`},
		{name: "bad id", data: `{"id":"a.b","messages":[]}`, want: "id: invalid conversation ID"},
		{name: "no role", data: ok(`{"content":"a"}`), want: "messages[0]: role is missing"},
		{name: "unknown role", data: ok(`{"role":"function","content":"a"}`), want: `messages[0]: role "function" is not supported`},
		{name: "null user content", data: ok(`{"role":"user","content":null}`), want: "messages[0] (user): content is missing or null"},
		{name: "image part", data: ok(`{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}`), want: `part 0 has type "image_url"`},
		{name: "number content", data: ok(`{"role":"user","content":3}`), want: "must be a string, null or an array of text parts"},
		{name: "tool result without call", data: ok(`{"role":"tool","tool_call_id":"nope","content":"r"}`), want: `tool_call_id "nope" answers no earlier tool call`},
		{name: "tool result without id", data: ok(`{"role":"tool","content":"r"}`), want: "tool_call_id is empty"},
		{name: "call without id", data: ok(`{"role":"assistant","tool_calls":[{"function":{"name":"f"}}]}`), want: "messages[0].tool_calls[0]: id is empty"},
		{name: "call without name", data: ok(`{"role":"assistant","tool_calls":[{"id":"x","function":{}}]}`), want: "function.name is empty"},
		{name: "call of another type", data: ok(`{"role":"assistant","tool_calls":[{"id":"x","type":"custom","function":{"name":"f"}}]}`), want: `type "custom"`},
		{name: "call ID twice", data: ok(`{"role":"assistant","tool_calls":[{"id":"x","function":{"name":"f"}},{"id":"x","function":{"name":"f"}}]}`), want: `id "x" is used by an earlier tool call`},
		{name: "user with tool calls", data: ok(`{"role":"user","content":"a","tool_calls":[]}`), want: "only assistant messages"},
		{name: "user with a call ID", data: ok(`{"role":"user","content":"a","tool_call_id":"x"}`), want: "only tool messages"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.ParseChat([]byte(tc.data))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
}

func TestExportImportExportIsIdentical(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	other, err := eventlog.Open(ctx, srv.Conn, eventlog.WithPrefix("elsewhere"))
	require.NoError(t, err)
	verifiedConversation(t, l, "round")

	first, err := replay.Export(ctx, l, "round")
	require.NoError(t, err)
	data1, err := json.MarshalIndent(first.Chat, "", "  ")
	require.NoError(t, err)
	var systems int
	for _, m := range first.Chat.Messages {
		if m.Role == replay.RoleSystem {
			systems++
		}
	}
	require.Equal(t, 1, systems)
	require.Equal(t, replay.RoleSystem, first.Chat.Messages[0].Role)
	assert.Equal(t, map[string]string{"tz": "CET"}, first.Chat.Metadata)

	c, err := replay.ParseChat(data1)
	require.NoError(t, err)
	plan, err := replay.PlanImport("round.json", c, time.Now())
	require.NoError(t, err)
	res, err := replay.Import(ctx, other, []*replay.ImportPlan{plan})
	require.NoError(t, err)
	assert.Equal(t, []replay.ImportResult{{Path: "round.json", Conversation: "round", Events: len(plan.Events), Status: replay.StatusImported}}, res)

	second, err := replay.Export(ctx, other, "round")
	require.NoError(t, err)
	data2, err := json.MarshalIndent(second.Chat, "", "  ")
	require.NoError(t, err)
	assert.Equal(t, string(data1), string(data2))

	t.Run("the import is one message", func(t *testing.T) {
		var seqs = map[uint64]bool{}
		for r, err := range other.Events(ctx, "round") {
			require.NoError(t, err)
			seqs[r.Seq] = true
			assert.Equal(t, replay.ActorImport, r.Actor)
			assert.Equal(t, plan.Cause, r.Cause)
		}
		assert.Len(t, seqs, 1)
	})
	t.Run("importing again changes nothing", func(t *testing.T) {
		again, err := replay.PlanImport("copy.json", c, time.Now())
		require.NoError(t, err)
		res, err := replay.Import(ctx, other, []*replay.ImportPlan{again})
		require.NoError(t, err)
		assert.Equal(t, replay.StatusUnchanged, res[0].Status)
		n, err := other.LastSeq(ctx, "round")
		require.NoError(t, err)
		turn, err := other.Load(ctx, "round")
		require.NoError(t, err)
		assert.Equal(t, len(plan.Events), turn.Events)
		assert.Equal(t, n, turn.Seq)
	})
	t.Run("the imported conversation verifies and keeps no system prompt it did not have", func(t *testing.T) {
		v, err := replay.Verify(ctx, other, "round")
		require.NoError(t, err)
		assert.True(t, v.OK())
		assert.Zero(t, v.Inferences)

		bare, err := replay.ParseChat([]byte(`{"id":"bare","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"hello"}]}`))
		require.NoError(t, err)
		p, err := replay.PlanImport("bare.json", bare, time.Now())
		require.NoError(t, err)
		_, err = replay.Import(ctx, other, []*replay.ImportPlan{p})
		require.NoError(t, err)
		turn, err := other.Load(ctx, "bare")
		require.NoError(t, err)
		_, _, has := turn.SystemPrompt()
		assert.False(t, has)
		out, err := replay.Export(ctx, other, "bare")
		require.NoError(t, err)
		for _, m := range out.Chat.Messages {
			assert.NotEqual(t, replay.RoleSystem, m.Role)
		}
	})
}

func TestImportIsAtomic(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	plan := func(id string) *replay.ImportPlan {
		c, err := replay.ParseChat([]byte(fmt.Sprintf(`{"id":%q,"messages":[{"role":"user","content":"hi %s"}]}`, id, id)))
		require.NoError(t, err)
		p, err := replay.PlanImport(id+".json", c, time.Now())
		require.NoError(t, err)
		return p
	}
	// "taken" exists with other events: nothing of the batch may land.
	c := newConvo(t, l, "taken")
	c.operator("test", events.UserAppended{BlockID: "u", Text: "mine"})
	_, err := replay.Import(ctx, l, []*replay.ImportPlan{plan("a"), plan("taken"), plan("b")})
	require.Error(t, err)
	assert.ErrorIs(t, err, replay.ErrExists)
	assert.Contains(t, err.Error(), "taken.json")
	assert.Contains(t, err.Error(), "nothing imported")
	for _, id := range []string{"a", "b"} {
		n, err := l.LastSeq(ctx, id)
		require.NoError(t, err)
		assert.Zero(t, n, "%s was imported although the batch failed", id)
	}
	// Two files for one conversation.
	_, err = replay.Import(ctx, l, []*replay.ImportPlan{plan("a"), plan("a")})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "also imported from a.json")

	res, err := replay.Import(ctx, l, []*replay.ImportPlan{plan("a"), plan("b")})
	require.NoError(t, err)
	assert.Len(t, res, 2)

	t.Run("an imported conversation continued since is still recognised", func(t *testing.T) {
		_, loop := defaultLoop(t)
		cont := newConvo(t, l, "a")
		cont.turn, err = l.Load(ctx, "a")
		require.NoError(t, err)
		cont.request(loop, "go on", nil)
		res, err := replay.Import(ctx, l, []*replay.ImportPlan{plan("a")})
		require.NoError(t, err)
		assert.Equal(t, replay.StatusUnchanged, res[0].Status)
	})
	t.Run("a derived ID is stable", func(t *testing.T) {
		c1, err := replay.ParseChat([]byte(`{"messages":[{"role":"user","content":"no id"}]}`))
		require.NoError(t, err)
		c2, err := replay.ParseChat([]byte("{\n  \"messages\": [ {\"content\": \"no id\", \"role\": \"user\"} ]\n}"))
		require.NoError(t, err)
		p1, err := replay.PlanImport("1", c1, time.Now())
		require.NoError(t, err)
		p2, err := replay.PlanImport("2", c2, time.Now())
		require.NoError(t, err)
		assert.Equal(t, p1.Conversation, p2.Conversation)
		assert.Equal(t, p1.Cause, p2.Cause)
		assert.True(t, strings.HasPrefix(p1.Conversation, "chat-"))
	})
}

func TestFork(t *testing.T) {
	ctx := context.Background()
	l := openTestLog(t)
	c := verifiedConversation(t, l, "base")
	at := 5

	f, err := replay.Fork(ctx, l, "base", at, "branch")
	require.NoError(t, err)
	assert.Equal(t, &replay.Forked{Conversation: "branch", From: "base", At: at, Blocks: f.Blocks}, f)
	want, err := l.LoadAt(ctx, "base", at)
	require.NoError(t, err)
	got, err := l.Load(ctx, "branch")
	require.NoError(t, err)
	assert.Equal(t, projector.Hash(want), projector.Hash(got), "the fork starts from base@5")
	assert.Equal(t, len(want.Blocks), f.Blocks)

	var first eventlog.Record
	for r, err := range l.Events(ctx, "branch") {
		require.NoError(t, err)
		first = r
		break
	}
	p, ok := first.Payload.(events.ConversationStarted)
	require.True(t, ok)
	assert.Equal(t, "base", p.ForkedFrom)
	assert.Equal(t, at, p.ForkedAt)
	assert.Equal(t, replay.ActorFork, first.Actor)

	t.Run("latest and a generated ID", func(t *testing.T) {
		f, err := replay.Fork(ctx, l, "base", 0, "")
		require.NoError(t, err)
		assert.Len(t, f.Conversation, 26)
		assert.Equal(t, c.turn.Events, f.At)
	})
	t.Run("into an existing conversation", func(t *testing.T) {
		_, err := replay.Fork(ctx, l, "base", 2, "branch")
		assert.ErrorIs(t, err, replay.ErrExists)
	})
	t.Run("past the end", func(t *testing.T) {
		_, err := replay.Fork(ctx, l, "base", 999, "late")
		assert.ErrorIs(t, err, eventlog.ErrNotFound)
	})
	t.Run("of nothing", func(t *testing.T) {
		_, err := replay.Fork(ctx, l, "nobody", 0, "x")
		assert.ErrorIs(t, err, replay.ErrNoEvents)
	})
	t.Run("onto itself", func(t *testing.T) {
		_, err := replay.Fork(ctx, l, "base", 1, "base")
		assert.ErrorContains(t, err, "must differ")
	})
	t.Run("the timeline says where it came from", func(t *testing.T) {
		tl, err := replay.Timeline(ctx, l, "branch")
		require.NoError(t, err)
		assert.Contains(t, tl.Events[0].Summary, "forked from base@5")
	})
}
