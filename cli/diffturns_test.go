package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// appendStep records payloads as one step of a fresh request.
func appendStep(t testing.TB, e *auditEnv, conv string, ps ...events.Payload) {
	t.Helper()
	ctx := context.Background()
	turn, err := e.log.Load(ctx, conv)
	require.NoError(t, err)
	tx := engine.NewTx(turn, "op-"+engine.NewID(), engine.WithLog(e.log))
	for _, p := range ps {
		require.NoError(t, tx.Emit("operator", p))
	}
	require.NoError(t, tx.Commit(ctx))
}

// turnFile writes a Turn as `export --format turn` does.
func turnFile(t testing.TB, dir, name string, turn *projector.Turn) string {
	t.Helper()
	data, err := json.MarshalIndent(turn, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, data, 0o600))
	return path
}

// diffDoc is the documented JSON of `diff-turns -o json`.
type diffDoc struct {
	Changes []struct {
		Op        string `json:"op"`
		ID        string `json:"id"`
		Kind      string `json:"kind"`
		FromIndex int    `json:"from_index"`
		ToIndex   int    `json:"to_index"`
	} `json:"changes"`
	SystemPrompt *struct {
		Fields []string `json:"fields"`
	} `json:"system_prompt"`
	Data       []json.RawMessage `json:"data"`
	Duplicates []struct {
		Side    string `json:"side"`
		By      string `json:"by"`
		Indexes []int  `json:"indexes"`
	} `json:"duplicates"`
	Violations []struct {
		Side  string `json:"side"`
		Rule  string `json:"rule"`
		Index int    `json:"index"`
	} `json:"violations"`
}

func TestDiffTurnsCommand(t *testing.T) {
	e := newAuditEnv(t, false)
	ctx := context.Background()
	appendStep(t, e, "mv",
		events.SystemPromptSet{BlockID: "s", Text: "You are terse.", Trust: events.Trusted},
		events.UserAppended{BlockID: "u1", Text: "hello"},
		events.LLMTextAppended{BlockID: "l1", Text: "hi"},
		events.UserAppended{BlockID: "u2", Text: "bye"})
	// An ordering bug: the system prompt ends up last.
	appendStep(t, e, "mv", events.BlocksReordered{Order: []string{"u1", "l1", "u2", "s"}, Reason: "bug"})
	before, err := e.log.LoadAt(ctx, "mv", 4)
	require.NoError(t, err)
	dir := t.TempDir()

	t.Run("a moved system prompt is one move", func(t *testing.T) {
		out, errOut, code := e.run("", "diff-turns", "mv@4", "mv")
		require.Equal(t, 1, code, errOut)
		var moved, other int
		for _, l := range strings.Split(out, "\n") {
			switch {
			case strings.HasPrefix(l, "> moved"):
				moved++
				assert.Contains(t, l, "system")
				assert.Contains(t, l, "A[0] -> B[3]")
			case strings.HasPrefix(l, "+ added"), strings.HasPrefix(l, "- removed"):
				other++
			}
		}
		assert.Equal(t, 1, moved)
		assert.Zero(t, other, "a move is not a removal plus an addition")
		assert.Contains(t, out, "* system prompt [index]")

		out, _, code = e.run("", "diff-turns", "mv@4", "mv", "-o", "json")
		require.Equal(t, 1, code)
		var d diffDoc
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		require.Len(t, d.Changes, 1)
		assert.Equal(t, "moved", d.Changes[0].Op)
		assert.Equal(t, "s", d.Changes[0].ID)
		assert.Equal(t, 0, d.Changes[0].FromIndex)
		assert.Equal(t, 3, d.Changes[0].ToIndex)
		require.NotNil(t, d.SystemPrompt)
		assert.Equal(t, []string{"index"}, d.SystemPrompt.Fields)
		assert.NotNil(t, d.Duplicates, "lists are never null")
		assert.NotNil(t, d.Violations)
	})
	t.Run("equal", func(t *testing.T) {
		out, _, code := e.run("", "diff-turns", "mv@4", turnFile(t, dir, "before.json", before))
		assert.Equal(t, 0, code)
		assert.Contains(t, out, "equal")
		_, _, code = e.run("", "diff-turns", "mv", "mv@5")
		assert.Equal(t, 0, code)
	})
	t.Run("a duplicated block", func(t *testing.T) {
		dup := before.Clone()
		dup.Blocks = append(dup.Blocks, events.Block{ID: "s2", Kind: events.KindSystem, Text: "You are terse.", Trust: events.Trusted})
		out, _, code := e.run("", "diff-turns", "mv@4", turnFile(t, dir, "dup.json", dup), "-o", "json")
		require.Equal(t, 1, code)
		var d diffDoc
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		require.Len(t, d.Duplicates, 1)
		assert.Equal(t, "B", d.Duplicates[0].Side)
		assert.Equal(t, "content", d.Duplicates[0].By)
		assert.Equal(t, []int{0, 4}, d.Duplicates[0].Indexes)
		out, _, _ = e.run("", "diff-turns", "mv@4", filepath.Join(dir, "dup.json"))
		assert.Contains(t, out, "duplicates:")
	})
	t.Run("a reasoning block without its follower", func(t *testing.T) {
		orphan := before.Clone()
		orphan.Blocks = append(orphan.Blocks[:2], append([]events.Block{{ID: "r", Kind: events.KindReasoning, Text: "hmm"}}, orphan.Blocks[2:]...)...)
		// s, u1, r, l1, u2: r is followed by l1, fine; move it before u2.
		orphan.Blocks[2], orphan.Blocks[3] = orphan.Blocks[3], orphan.Blocks[2]
		out, _, code := e.run("", "diff-turns", "mv@4", turnFile(t, dir, "orphan.json", orphan), "-o", "json")
		require.Equal(t, 1, code)
		var d diffDoc
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		require.Len(t, d.Violations, 1)
		assert.Equal(t, "B", d.Violations[0].Side)
		assert.Equal(t, string(replay.RuleReasoningFollower), d.Violations[0].Rule)
		assert.Equal(t, 3, d.Violations[0].Index)
		out, _, _ = e.run("", "diff-turns", "mv@4", filepath.Join(dir, "orphan.json"))
		assert.Contains(t, out, "violations:")
		assert.Contains(t, out, "reasoning_without_follower")
	})
	t.Run("a chat export is an operand too", func(t *testing.T) {
		out, _, code := e.run("", "export", "mv")
		require.Equal(t, 0, code)
		chat := e.file("mv-chat.json", out)
		out, _, code = e.run("", "diff-turns", chat, "mv", "-o", "json")
		require.Equal(t, 1, code, "the file has no IDs, trust or order of its own")
		var d diffDoc
		require.NoError(t, json.Unmarshal([]byte(out), &d))
		for _, c := range d.Changes {
			assert.NotEqual(t, "added", c.Op, "blocks pair by content: %+v", c)
			assert.NotEqual(t, "removed", c.Op, "blocks pair by content: %+v", c)
		}
	})
	t.Run("colour only on a terminal without NO_COLOR", func(t *testing.T) {
		out, _, _ := e.run("", "diff-turns", "mv@4", "mv")
		assert.NotContains(t, out, "\x1b[", "piped: no colour")
		old := isTerminal
		isTerminal = func(any) bool { return true }
		t.Cleanup(func() { isTerminal = old })
		out, _, _ = e.run("", "diff-turns", "mv@4", "mv")
		assert.Contains(t, out, "\x1b[36m> moved")
		t.Setenv("NO_COLOR", "1")
		out, _, _ = e.run("", "diff-turns", "mv@4", "mv")
		assert.NotContains(t, out, "\x1b[")
	})
	t.Run("errors exit 2", func(t *testing.T) {
		garbage := e.file("garbage.json", "{not json")
		other := e.file("other.json", `{"hello": "world"}`)
		badTurn := e.file("bad-turn.json", `{"blocks": [], "extra": 1}`)
		tests := []struct {
			name string
			args []string
			want string
		}{
			{name: "bad position", args: []string{"mv@x", "mv"}, want: "after '@' comes an event position"},
			{name: "no such conversation", args: []string{"mv", "nobody"}, want: "neither a file nor a conversation"},
			{name: "past the end", args: []string{"mv@99", "mv"}, want: "not found"},
			{name: "bad ID", args: []string{"a.b", "mv"}, want: "invalid conversation ID"},
			{name: "not JSON", args: []string{garbage, "mv"}, want: "not a JSON object"},
			{name: "neither shape", args: []string{"mv", other}, want: "neither a Turn"},
			{name: "unknown field", args: []string{badTurn, "mv"}, want: `unknown field "extra"`},
			{name: "one operand", args: []string{"mv"}, want: "accepts 2 arg"},
		}
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				_, errOut, code := e.run("", append([]string{"diff-turns"}, tc.args...)...)
				assert.Equal(t, 2, code)
				assert.Contains(t, errOut, tc.want)
			})
		}
	})
}

// bigTurnFiles writes two 5,000-block Turns: B moves 50 blocks (the
// system prompt among them), changes 100 texts, adds 100 and removes 50.
func bigTurnFiles(b *testing.B) (string, string) {
	a := &projector.Turn{Conversation: "big", Data: map[string]string{"tz": "UTC"}}
	for i := range 5000 {
		k := []events.Kind{events.KindUser, events.KindLLMText, events.KindReasoning, events.KindLLMText}[i%4]
		if i == 0 {
			k = events.KindSystem
		}
		a.Blocks = append(a.Blocks, events.Block{ID: fmt.Sprintf("01J%023d", i), Kind: k,
			Text: fmt.Sprintf("block %d\n%s\nline three of %d", i, strings.Repeat("lorem ipsum ", 8), i),
			Meta: map[string]string{events.MetaSection: "conversation"}})
	}
	bt := a.Clone()
	for i := 0; i < 100; i++ {
		bt.Blocks[i*47+3].Text += " (edited)"
	}
	for k := 0; k < 50; k++ {
		i := k * 97 % len(bt.Blocks)
		m := bt.Blocks[i]
		bt.Blocks = append(bt.Blocks[:i], bt.Blocks[i+1:]...)
		j := (i + 2500) % len(bt.Blocks)
		bt.Blocks = append(bt.Blocks[:j], append([]events.Block{m}, bt.Blocks[j:]...)...)
	}
	for k := 0; k < 50; k++ {
		i := (k*61 + 11) % len(bt.Blocks)
		bt.Blocks = append(bt.Blocks[:i], bt.Blocks[i+1:]...)
	}
	for k := 0; k < 100; k++ {
		i := (k*53 + 7) % len(bt.Blocks)
		bt.Blocks = append(bt.Blocks[:i], append([]events.Block{{ID: fmt.Sprintf("NEW%023d", k), Kind: events.KindUser, Text: fmt.Sprint("new ", k)}}, bt.Blocks[i:]...)...)
	}
	dir := b.TempDir()
	return turnFile(b, dir, "a.json", a), turnFile(b, dir, "b.json", bt)
}

// BenchmarkDiffTurnsFiles5000 is `turnlog diff-turns a.json b.json` of two
// 5,000-block Turns, end to end: reading and decoding both files, the
// diff, and the text output.
func BenchmarkDiffTurnsFiles5000(b *testing.B) {
	fa, fb := bigTurnFiles(b)
	for b.Loop() {
		root := newRootCmd()
		root.SetOut(io.Discard)
		root.SetErr(io.Discard)
		root.SetArgs([]string{"diff-turns", fa, fb})
		if err := root.Execute(); err == nil {
			b.Fatal("the Turns differ; diff-turns must say so")
		}
	}
}
