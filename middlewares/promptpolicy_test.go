package middlewares_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

// imported is a system block as `turnlog import` records one: untrusted,
// source "import".
func imported(id, text string, meta ...string) events.Block {
	b := events.Block{ID: id, Kind: events.KindSystem, Text: text,
		Meta: metaOf(append([]string{events.MetaSystemPromptSource, middlewares.SourceImport}, meta...)...)}
	return b
}

// systemTexts lists the texts of the Turn's system blocks, in order.
func systemTexts(t *projector.Turn) []string {
	var out []string
	for _, b := range t.Blocks {
		if b.Kind == events.KindSystem {
			out = append(out, b.Text)
		}
	}
	return out
}

// lockPrompt locks the conversation's prompt the way `turnlog prompt lock`
// does: a systemprompt.locked event, applied through the Tx.
func lockPrompt(t *testing.T, tx *engine.Tx, id string) {
	t.Helper()
	require.NoError(t, tx.Emit("operator:test", events.SystemPromptLocked{BlockID: id, Reason: "test"}))
	require.NoError(t, tx.Commit(context.Background()))
}

// TestTemplatePromptPolicy: a conversation that arrives with a prompt the
// template did not write keeps it (no second prompt in front of it, no
// demotion), unless the profile says replace, which replaces the text in
// place and records whose prompt gave way.
func TestTemplatePromptPolicy(t *testing.T) {
	const tmpl = "You are the template's assistant."
	hash := projector.HashText(tmpl)
	tests := []struct {
		name      string
		policy    middlewares.PromptPolicy
		template  string
		blocks    []events.Block
		lock      string // block to lock first
		want      []events.Type
		wantTexts []string
		wantIndex int // of the conversation's prompt afterwards
	}{
		{name: "keep: imported prompt", blocks: []events.Block{imported("m0", "You are terse."), user("m1", "hi")},
			want: []events.Type{}, wantTexts: []string{"You are terse."}},
		{name: "keep: a user-supplied prompt after the first message stays where it is",
			blocks: []events.Block{user("m0", "hi"), imported("m1", "You are terse."), llm("m2", "ok")},
			want:   []events.Type{}, wantTexts: []string{"You are terse."}, wantIndex: 1},
		{name: "keep: an operator's prompt", blocks: []events.Block{sys("s", "Operator says.", events.MetaSystemPromptSource, middlewares.SourceOperator), user("u", "hi")},
			want: []events.Type{}, wantTexts: []string{"Operator says."}},
		{name: "keep: a forked prompt of another profile", blocks: []events.Block{sys("s", "Persona.", events.MetaSystemPromptSource, "profile"), user("u", "hi")},
			want: []events.Type{}, wantTexts: []string{"Persona."}},
		{name: "replace: imported prompt replaced in place", policy: middlewares.PolicyReplace,
			blocks: []events.Block{user("m0", "hi"), imported("m1", "You are terse.", middlewares.MetaSystemPromptAppendPrefix+"x", "h")},
			want:   []events.Type{events.TypeSystemPromptReplaced}, wantTexts: []string{tmpl}, wantIndex: 1},
		{name: "replace: a template that renders to nothing removes it", policy: middlewares.PolicyReplace, template: " ",
			blocks: []events.Block{imported("m0", "You are terse."), user("m1", "hi")},
			want:   []events.Type{events.TypeBlocksRemoved, events.TypeDataSet}, wantTexts: nil, wantIndex: -1},
		{name: "replace: a locked prompt is kept", policy: middlewares.PolicyReplace, lock: "m0",
			blocks: []events.Block{imported("m0", "You are terse."), user("m1", "hi")},
			want:   []events.Type{}, wantTexts: []string{"You are terse."}},
		{name: "no prompt: the template's is inserted", blocks: []events.Block{user("m0", "hi")},
			want: []events.Type{events.TypeSystemPromptSet}, wantTexts: []string{tmpl}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := tmpl
			if tc.template != "" {
				text = tc.template
			}
			mw := templateMW(t, middlewares.TemplatePromptConfig{Templates: middlewares.StaticTemplate(text), Policy: tc.policy})
			tx := txOf(t, tc.blocks...)
			if tc.lock != "" {
				lockPrompt(t, tx, tc.lock)
			}
			first, second := runTwice(t, mw, tx)
			assert.Equal(t, tc.want, typesOf(first))
			assert.Empty(t, second, "idempotent")
			assert.Equal(t, tc.wantTexts, systemTexts(tx.Turn()), "exactly one prompt")
			_, i, _ := tx.Turn().SystemPrompt()
			assert.Equal(t, tc.wantIndex, i)
			if len(first) == 1 && first[0].Type == events.TypeSystemPromptReplaced {
				p := first[0].Payload.(events.SystemPromptReplaced)
				assert.Equal(t, middlewares.SourceImport, p.PreviousSource, "the old text's source")
				assert.Equal(t, "You are terse.", p.Previous)
				assert.Equal(t, hash, p.TemplateHash)
				sp, _, _ := tx.Turn().SystemPrompt()
				assert.Equal(t, tc.blocks[1].ID, sp.ID, "the block keeps its identity")
				assert.Equal(t, map[string]string{events.MetaSystemPromptSource: middlewares.SourceTemplate, middlewares.MetaTemplateHash: hash}, sp.Meta,
					"the new source; what others recorded about the old text is gone")
			}
		})
	}
}

// overBudget appends enough conversation to push a Turn over the
// compacting chain's budget (6 blocks).
func overBudget(t *testing.T, tx *engine.Tx) {
	t.Helper()
	for i, text := range []string{"a", "two", "b", "three", "c", "four"} {
		p := events.Payload(events.UserAppended{BlockID: "x" + text, Text: text})
		if i%2 == 0 {
			p = events.LLMTextAppended{BlockID: "x" + text, Text: text}
		}
		require.NoError(t, tx.Emit("test", p))
	}
	require.NoError(t, tx.Commit(context.Background()))
}

// TestTemplateCompactionKeepsAPromptItDidNotWrite: a compaction rebuilds
// the template's own prompt only. Before, it rendered the global template
// for a conversation whose (imported) prompt it did not write and put the
// result in front of it: two prompts.
func TestTemplateCompactionKeepsAPromptItDidNotWrite(t *testing.T) {
	sum := &recorder{reply: "they talked"}
	h := compactingChain(t, middlewares.StaticTemplate("Template prompt."), middlewares.TemplatePromptConfig{}, sum)
	tx := txOf(t, imported("m0", "You are terse."), user("m1", "hi"))
	overBudget(t, tx)
	require.NoError(t, h(context.Background(), tx))
	assert.Equal(t, []events.Type{events.TypeInferenceFinished, events.TypeTurnCompacted}, typesOf(tx.Pending()))
	assert.Equal(t, []string{"You are terse."}, systemTexts(tx.Turn()))
}

// TestTemplateCompactionLeavesALockedPromptAlone: a locked template prompt
// is not rebuilt on compaction. Before, the rebuild replaced it.
func TestTemplateCompactionLeavesALockedPromptAlone(t *testing.T) {
	src := newMemTemplates("Built at [system:time].")
	clk := &clock{}
	sum := &recorder{reply: "they talked"}
	h := compactingChain(t, src, middlewares.TemplatePromptConfig{Now: clk.now}, sum)
	ctx := context.Background()
	tx := txOf(t, user("u1", "one"))
	require.NoError(t, h(ctx, tx))
	require.NoError(t, tx.Commit(ctx))
	sp, _, ok := tx.Turn().SystemPrompt()
	require.True(t, ok)
	lockPrompt(t, tx, sp.ID)

	clk.t = clk.t.Add(time.Hour)
	overBudget(t, tx)
	require.NoError(t, h(ctx, tx))
	assert.Equal(t, []events.Type{events.TypeInferenceFinished, events.TypeTurnCompacted}, typesOf(tx.Pending()), "compacted, prompt untouched")
	assert.Equal(t, []string{sp.Text}, systemTexts(tx.Turn()))
}

// TestGlobalPromptHonoursTheConversationLock: while an operator holds the
// conversation's prompt locked, the global prompt is neither inserted nor
// changed. Before, it was inserted beside the locked prompt.
func TestGlobalPromptHonoursTheConversationLock(t *testing.T) {
	src := "policy v1"
	mw := middlewares.Must(middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{
		Prompt: func(context.Context, *engine.Tx) (string, error) { return src, nil }}))
	tx := txOf(t, sys("s", "Frozen.", events.MetaSystemPromptSource, middlewares.SourceOperator), user("u", "hi"))
	lockPrompt(t, tx, "s")
	_, evs, err := run(t, mw, tx)
	require.NoError(t, err)
	assert.Empty(t, evs, "nothing inserted beside a locked prompt")

	// Unlocked, the global prompt arrives; locked again, it stays as it is.
	require.NoError(t, tx.Emit("operator:test", events.SystemPromptUnlocked{BlockID: "s"}))
	_, evs, err = run(t, mw, tx)
	require.NoError(t, err)
	assert.Equal(t, []events.Type{events.TypeSystemPromptUnlocked, events.TypeSystemPromptSet}, typesOf(evs))
	lockPrompt(t, tx, "s")
	src = "policy v2"
	_, evs, err = run(t, mw, tx)
	require.NoError(t, err)
	assert.Empty(t, evs)
	assert.Equal(t, []string{"Frozen.", "policy v1"}, systemTexts(tx.Turn()))
}

// TestRolesLeavesALockedPromptWhole: role markers in a locked trusted
// prompt are not split out. Before, the split changed the locked text.
func TestRolesLeavesALockedPromptWhole(t *testing.T) {
	mw := middlewares.Must(middlewares.Roles(middlewares.RolesConfig{}))
	text := "Be brief.\nUser: what is 2+2?\nAssistant: 4"
	tx := txOf(t, sys("s", text), user("u", "hi"))
	lockPrompt(t, tx, "s")
	_, evs, err := run(t, mw, tx)
	require.NoError(t, err)
	assert.Empty(t, evs)
	assert.Equal(t, text, tx.Turn().Blocks[0].Text)
}

// TestSystemPromptMiddlewaresHonourTheLockEvent: the lock an operator sets
// with systemprompt.locked stops the replace and append middlewares too,
// and unlocking gives the prompt back to them.
func TestSystemPromptMiddlewaresHonourTheLockEvent(t *testing.T) {
	tests := []struct {
		name string
		mw   engine.Middleware
	}{
		{name: "systemprompt replace", mw: middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{
			Prompt: middlewares.StaticPrompt("Profile prompt."), Source: "profile", Policy: middlewares.PolicyReplace}))},
		{name: "systemprompt append", mw: middlewares.Must(middlewares.SystemPromptAppend(middlewares.SystemPromptAppendConfig{
			Prompt: middlewares.StaticPrompt("Also this.")}))},
		{name: "template replace", mw: templateMW(t, middlewares.TemplatePromptConfig{
			Templates: middlewares.StaticTemplate("Template prompt."), Policy: middlewares.PolicyReplace})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tx := txOf(t, sys("s", "Frozen.", events.MetaSystemPromptSource, middlewares.SourceOperator), user("u", "hi"))
			lockPrompt(t, tx, "s")
			_, evs, err := run(t, tc.mw, tx)
			require.NoError(t, err)
			assert.Empty(t, evs)
			assert.Equal(t, []string{"Frozen."}, systemTexts(tx.Turn()))

			require.NoError(t, tx.Emit("operator:test", events.SystemPromptUnlocked{BlockID: "s"}))
			require.NoError(t, tx.Commit(context.Background()))
			_, evs, err = run(t, tc.mw, tx)
			require.NoError(t, err)
			assert.Equal(t, []events.Type{events.TypeSystemPromptReplaced}, typesOf(evs), "unlocked, the middleware manages it again")
			assert.Len(t, systemTexts(tx.Turn()), 1)
		})
	}
}

func TestCheckRequestData(t *testing.T) {
	assert.NoError(t, middlewares.CheckRequestData(map[string]string{"cwd": "/src", "tz": "UTC", "systemprompt": "no dot, not reserved"}, nil))
	err := middlewares.CheckRequestData(map[string]string{"tz": "UTC", "trust.x": "1", "compaction.y": "2"}, nil)
	assert.ErrorIs(t, err, middlewares.ErrReservedData)
	assert.ErrorContains(t, err, `data key "compaction.y" is reserved`, "the first bad key in key order")
	assert.NoError(t, middlewares.CheckRequestData(map[string]string{"trust.x": "1"}, []string{"trust.x"}))
	for _, k := range middlewares.RequestDataKeys {
		assert.Equal(t, k.FromRequest == "profile", middlewares.ReservedDataKey(k.Key), "%s: the table and the namespaces agree", k.Key)
	}
}
