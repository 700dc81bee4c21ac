package middlewares_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
)

func TestGlobalPrompt(t *testing.T) {
	const policy = "Never reveal customer data."
	global := func(text string) events.Block {
		return sys("g", text, middlewares.MetaGlobalPromptID, "global", events.MetaSection, "system")
	}
	tests := []struct {
		name      string
		blocks    []events.Block
		want      []events.Type
		wantOrder []string // block texts after the runs
	}{
		{
			name:      "no system block: at the front",
			blocks:    []events.Block{user("u1", "hi")},
			want:      []events.Type{events.TypeSystemPromptSet},
			wantOrder: []string{policy, "hi"},
		},
		{
			name:      "after the first system block",
			blocks:    []events.Block{sys("s1", prompt), user("u1", "hi")},
			want:      []events.Type{events.TypeSystemPromptSet},
			wantOrder: []string{prompt, policy, "hi"},
		},
		{
			name:      "present with the same text: nothing",
			blocks:    []events.Block{sys("s1", prompt), global(policy), user("u1", "hi")},
			want:      []events.Type{},
			wantOrder: []string{prompt, policy, "hi"},
		},
		{
			name:      "the text changed since: replaced in place",
			blocks:    []events.Block{sys("s1", prompt), global("old policy"), user("u1", "hi")},
			want:      []events.Type{events.TypeSystemPromptReplaced},
			wantOrder: []string{prompt, policy, "hi"},
		},
		{
			name:      "locked: left alone",
			blocks:    []events.Block{sys("s1", prompt), sys("g", "old", middlewares.MetaGlobalPromptID, "global", events.MetaSystemPromptLock, "x")},
			want:      []events.Type{},
			wantOrder: []string{prompt, "old"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := middlewares.Must(middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{Prompt: middlewares.StaticPrompt(policy)}))
			tx := txOf(t, tc.blocks...)
			first, second := runTwice(t, mw, tx)
			assert.Equal(t, tc.want, typesOf(first))
			assert.Empty(t, second, "the second run changes nothing")
			var texts []string
			for _, b := range tx.Turn().Blocks {
				texts = append(texts, b.Text)
			}
			assert.Equal(t, tc.wantOrder, texts)
			for _, e := range first {
				assert.Equal(t, middlewares.ActorGlobalPrompt, e.Actor)
				if p, ok := e.Payload.(events.SystemPromptSet); ok {
					assert.Equal(t, events.Trusted, p.Trust)
					assert.Equal(t, "global", p.Meta[middlewares.MetaGlobalPromptID])
					assert.Equal(t, "system", p.Meta[events.MetaSection])
				}
			}
		})
	}
}

// TestPromptsDoNotFight runs the global prompt before and after the system
// prompt: whichever comes first, each keeps its own block and a second
// pass changes nothing.
func TestPromptsDoNotFight(t *testing.T) {
	replace := middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt)}))
	global := middlewares.Must(middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{Prompt: middlewares.StaticPrompt("policy")}))
	for _, tc := range []struct {
		name  string
		chain []engine.Middleware
	}{
		{"system prompt first", []engine.Middleware{replace, global}},
		{"global prompt first", []engine.Middleware{global, replace}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tx := txOf(t, user("u1", "hi"))
			mw := func(h engine.Handler) engine.Handler { return tc.chain[0](tc.chain[1](h)) }
			first, second := runTwice(t, mw, tx)
			assert.Len(t, first, 2)
			assert.Empty(t, second)
			sp, i, ok := tx.Turn().SystemPrompt()
			require.True(t, ok)
			assert.Equal(t, 0, i)
			assert.Equal(t, prompt, sp.Text, "the active system prompt is the system prompt, not the policy")
			assert.Equal(t, []events.Kind{events.KindSystem, events.KindSystem, events.KindUser}, kindsOf(tx.Turn().Blocks))
		})
	}
}
