package middlewares_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/middlewares"
)

const prompt = "You are a careful assistant."

func TestSystemPromptReplace(t *testing.T) {
	src := middlewares.ActorSystemPromptReplace
	replace := middlewares.PolicyReplace
	tests := []struct {
		name   string
		policy middlewares.PromptPolicy
		blocks []events.Block
		// want is the event of the first run (none when empty).
		want      events.Type
		wantTexts []string // texts of the system blocks after the run
		// wantFrom is the PreviousSource a replacement records.
		wantFrom string
	}{
		{
			name:      "no system block gives a new one at the front",
			blocks:    []events.Block{user("u1", "hi")},
			want:      events.TypeSystemPromptSet,
			wantTexts: []string{prompt},
		},
		{
			name:      "empty turn gives a new one",
			want:      events.TypeSystemPromptSet,
			wantTexts: []string{prompt},
		},
		{
			name:      "its own earlier text is replaced, not appended",
			blocks:    []events.Block{sys("s1", "You are a pirate.", events.MetaSystemPromptSource, src), user("u1", "hi")},
			want:      events.TypeSystemPromptReplaced,
			wantTexts: []string{prompt},
			wantFrom:  src,
		},
		{
			name:      "keep: a prompt it did not write is the conversation's and is kept",
			blocks:    []events.Block{sys("s1", "You are a pirate.", events.MetaSystemPromptSource, "import"), user("u1", "hi")},
			wantTexts: []string{"You are a pirate."},
		},
		{
			name:      "keep: a prompt without a source is kept too, and nothing goes in front of it",
			blocks:    []events.Block{user("u0", "hello"), sys("s1", "You are a pirate."), user("u1", "hi")},
			wantTexts: []string{"You are a pirate."},
		},
		{
			name:      "replace: a prompt it did not write is replaced in place",
			policy:    replace,
			blocks:    []events.Block{sys("s1", "You are a pirate.", events.MetaSystemPromptSource, "import"), user("u1", "hi")},
			want:      events.TypeSystemPromptReplaced,
			wantTexts: []string{prompt},
			wantFrom:  "import",
		},
		{
			name:      "replace: only the first system block is replaced",
			policy:    replace,
			blocks:    []events.Block{sys("s1", "old"), user("u1", "hi"), sys("s2", "later")},
			want:      events.TypeSystemPromptReplaced,
			wantTexts: []string{prompt, "later"},
		},
		{
			name:      "replace: same text from another source gets the source",
			policy:    replace,
			blocks:    []events.Block{sys("s1", prompt, events.MetaSystemPromptSource, "import"), user("u1", "hi")},
			want:      events.TypeSystemPromptReplaced,
			wantTexts: []string{prompt},
			wantFrom:  "import",
		},
		{
			name:      "already the prompt from this source: nothing",
			blocks:    []events.Block{sys("s1", prompt, events.MetaSystemPromptSource, src), user("u1", "hi")},
			wantTexts: []string{prompt},
		},
		{
			name:      "a locked block is left alone",
			policy:    replace,
			blocks:    []events.Block{sys("s1", "locked text", events.MetaSystemPromptLock, "operator"), user("u1", "hi")},
			wantTexts: []string{"locked text"},
		},
		{
			name:      "a locked block of its own is left alone",
			blocks:    []events.Block{sys("s1", "locked text", events.MetaSystemPromptSource, src, events.MetaSystemPromptLock, "operator"), user("u1", "hi")},
			wantTexts: []string{"locked text"},
		},
		{
			name:      "a global prompt block is not the system prompt",
			blocks:    []events.Block{sys("g", "policy", middlewares.MetaGlobalPromptID, "global"), user("u1", "hi")},
			want:      events.TypeSystemPromptSet,
			wantTexts: []string{prompt, "policy"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt), Policy: tc.policy}))
			tx := txOf(t, tc.blocks...)
			before := len(tx.Turn().Blocks)
			first, second := runTwice(t, mw, tx)

			if tc.want == "" {
				assert.Empty(t, first)
			} else if assert.Len(t, first, 1) {
				e := first[0]
				assert.Equal(t, tc.want, e.Type)
				assert.Equal(t, middlewares.ActorSystemPromptReplace, e.Actor)
				switch p := e.Payload.(type) {
				case events.SystemPromptSet:
					assert.Equal(t, 0, p.Index)
					assert.Equal(t, events.Trusted, p.Trust)
					assert.Equal(t, before+1, len(tx.Turn().Blocks))
				case events.SystemPromptReplaced:
					assert.Equal(t, tc.blocks[0].Text, p.Previous)
					assert.Equal(t, prompt, p.Text, "replaced exactly, nothing appended")
					assert.Equal(t, tc.wantFrom, p.PreviousSource, "the event says whose prompt gave way")
					assert.Equal(t, src, p.Meta[events.MetaSystemPromptSource], "and whose took its place")
					assert.Equal(t, before, len(tx.Turn().Blocks))
				}
			}
			assert.Empty(t, second, "the second run changes nothing")
			assert.Empty(t, tx.Pending())

			var texts []string
			for _, b := range tx.Turn().Blocks {
				if b.Kind == events.KindSystem {
					texts = append(texts, b.Text)
				}
			}
			assert.Equal(t, tc.wantTexts, texts)
			if tc.want != "" {
				sp, i, ok := tx.Turn().SystemPrompt()
				require.True(t, ok)
				assert.Equal(t, 0, i, "in place: the first block stays first")
				assert.Equal(t, src, sp.Meta[events.MetaSystemPromptSource])
			}
		})
	}
}

func TestSystemPromptReplaceRefusesAnUnknownPolicy(t *testing.T) {
	_, err := middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt), Policy: "overwrite"})
	assert.ErrorContains(t, err, `prompt policy "overwrite": use "keep" (the default) or "replace"`)
}

func TestSystemPromptReplaceFromFunc(t *testing.T) {
	tests := []struct {
		name    string
		prompt  middlewares.PromptFunc
		wantErr bool
		want    []events.Type
	}{
		{
			name: "the function sees the Tx",
			prompt: func(_ context.Context, tx *engine.Tx) (string, error) {
				return "prompt for " + tx.Cause(), nil
			},
			want: []events.Type{events.TypeSystemPromptSet},
		},
		{
			name:   "an empty prompt changes nothing",
			prompt: middlewares.StaticPrompt(""),
			want:   []events.Type{},
		},
		{
			name:    "an error fails the step",
			prompt:  func(context.Context, *engine.Tx) (string, error) { return "", errors.New("template broken") },
			wantErr: true,
			want:    []events.Type{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: tc.prompt}))
			called, evs, err := run(t, mw, txOf(t, user("u1", "hi")))
			if tc.wantErr {
				assert.ErrorContains(t, err, "template broken")
				assert.False(t, called, "a failed middleware must not call the model")
			} else {
				assert.NoError(t, err)
			}
			assert.Equal(t, tc.want, typesOf(evs))
		})
	}
}

func TestSystemPromptAppend(t *testing.T) {
	const extra = "Use tools when they help."
	tests := []struct {
		name     string
		blocks   []events.Block
		want     events.Type
		wantText string // the first system block's text after both runs
	}{
		{
			name:     "no system block gives a new one",
			blocks:   []events.Block{user("u1", "hi")},
			want:     events.TypeSystemPromptSet,
			wantText: extra,
		},
		{
			name:     "appended to the first system block once",
			blocks:   []events.Block{sys("s1", "You are a pirate."), user("u1", "hi")},
			want:     events.TypeSystemPromptReplaced,
			wantText: "You are a pirate.\n\n" + extra,
		},
		{
			name:     "a locked block is left alone",
			blocks:   []events.Block{sys("s1", "locked", events.MetaSystemPromptLock, "yes")},
			wantText: "locked",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mw := middlewares.Must(middlewares.SystemPromptAppend(middlewares.SystemPromptAppendConfig{Prompt: middlewares.StaticPrompt(extra)}))
			tx := txOf(t, tc.blocks...)
			first, second := runTwice(t, mw, tx)
			if tc.want == "" {
				assert.Empty(t, first)
			} else {
				assert.Equal(t, []events.Type{tc.want}, typesOf(first))
			}
			assert.Empty(t, second, "appends once")
			sp, _, ok := tx.Turn().SystemPrompt()
			require.True(t, ok)
			assert.Equal(t, tc.wantText, sp.Text)
		})
	}
}

func TestSystemPromptAppendTagsAndChanges(t *testing.T) {
	appendOf := func(tag, text string) engine.Middleware {
		return middlewares.Must(middlewares.SystemPromptAppend(middlewares.SystemPromptAppendConfig{Tag: tag, Prompt: middlewares.StaticPrompt(text)}))
	}
	tx := txOf(t, sys("s1", "Base."), user("u1", "hi"))
	sp := func() string { b, _, _ := tx.Turn().SystemPrompt(); return b.Text }

	_, _ = runTwice(t, appendOf("tools", "Tools v1."), tx)
	_, _ = runTwice(t, appendOf("style", "Be brief."), tx)
	assert.Equal(t, "Base.\n\nTools v1.\n\nBe brief.", sp(), "two tags append once each")

	// The tools text changed, but it is no longer the tail: appended again.
	evs, second := runTwice(t, appendOf("tools", "Tools v2."), tx)
	assert.Equal(t, []events.Type{events.TypeSystemPromptReplaced}, typesOf(evs))
	assert.Empty(t, second)
	assert.Equal(t, "Base.\n\nTools v1.\n\nBe brief.\n\nTools v2.", sp())

	// Now it is the tail: a change swaps it in place.
	evs, second = runTwice(t, appendOf("tools", "Tools v3."), tx)
	assert.Equal(t, []events.Type{events.TypeSystemPromptReplaced}, typesOf(evs))
	assert.Empty(t, second)
	assert.Equal(t, "Base.\n\nTools v1.\n\nBe brief.\n\nTools v3.", sp())

	// A block the middleware inserted whole is swapped whole.
	tx = txOf(t, user("u1", "hi"))
	_, _ = runTwice(t, appendOf("", "one"), tx)
	_, _ = runTwice(t, appendOf("", "two"), tx)
	assert.Equal(t, "two", sp())
}

func TestPromptConfigsValidate(t *testing.T) {
	_, err := middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{})
	assert.ErrorContains(t, err, "Prompt is nil")
	_, err = middlewares.SystemPromptAppend(middlewares.SystemPromptAppendConfig{})
	assert.ErrorContains(t, err, "Prompt is nil")
	_, err = middlewares.SystemPromptAppend(middlewares.SystemPromptAppendConfig{Prompt: middlewares.StaticPrompt("x"), Tag: "a b"})
	assert.ErrorContains(t, err, "white space")
	_, err = middlewares.GlobalPrompt(middlewares.GlobalPromptConfig{})
	assert.ErrorContains(t, err, "Prompt is nil")
}
