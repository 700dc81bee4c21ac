package template

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 23: typos in a template were accepted silently and a conversation
// was recorded with the broken prompt. The lint lists each one with its
// position; rendering stays as the language's rules say.
func TestLint(t *testing.T) {
	type want struct {
		code      string
		line, col int
		text      string
	}
	for _, tc := range []struct {
		name string
		src  string
		want []want
	}{
		{name: "clean", src: "You help with [prompt:conversation_id] on [system:date].\n[if git:branch]Branch: [git:branch][endif]\n[if file:AGENTS.md][file:AGENTS.md][else]none[endif]"},
		{name: "no tags at all", src: "Plain text, a JSON array [1, 2] and a [note]."},
		{name: "unknown type", src: "Notes: [fiel:README.md]", want: []want{{WarnUnknownType, 1, 8, "[fiel:README.md]"}}},
		{name: "unknown type in a condition", src: "[if fiel:x]a[endif]", want: []want{{WarnUnknownType, 1, 1, "[if fiel:x]"}}},
		{name: "unknown fixed name", src: "Today is\n  [system:dat].", want: []want{{WarnUnknownVariable, 2, 3, "[system:dat]"}}},
		{name: "unknown prompt and git names", src: "[prompt:modle][git:brnach]", want: []want{
			{WarnUnknownVariable, 1, 1, "[prompt:modle]"}, {WarnUnknownVariable, 1, 15, "[git:brnach]"}}},
		{name: "any file name", src: "[file:docs/a b.md][file:x]"},
		{name: "unterminated fixed name", src: "on [system:dat\nnext", want: []want{{WarnUnterminatedTag, 1, 4, "[system:dat"}}},
		{name: "unterminated at the end", src: "x [if git:branch", want: []want{{WarnUnterminatedTag, 1, 3, "[if git:branch"}}},
		{name: "if without endif", src: "a\n[if git:branch]b", want: []want{{WarnUnmatchedIf, 2, 1, "[if git:branch]"}}},
		{name: "if without endif keeps its else", src: "[if git:branch]b[else]c", want: []want{
			{WarnUnmatchedIf, 1, 1, "[if git:branch]"}, {WarnUnmatchedElse, 1, 17, "[else]"}}},
		{name: "stray endif", src: "a[endif]", want: []want{{WarnUnmatchedEndif, 1, 2, "[endif]"}}},
		{name: "stray else", src: "[else]", want: []want{{WarnUnmatchedElse, 1, 1, "[else]"}}},
		{name: "second else", src: "[if git:branch]a[else]b[else]c[endif]", want: []want{{WarnUnmatchedElse, 1, 24, "[else]"}}},
		{name: "columns count characters", src: "é€ [fiel:x]", want: []want{{WarnUnknownType, 1, 4, "[fiel:x]"}}},
		{name: "all of the issue's", src: "[fiel:README.md] [system:dat\n[if git:branch] open", want: []want{
			{WarnUnknownType, 1, 1, "[fiel:README.md]"}, {WarnUnterminatedTag, 1, 18, "[system:dat"}, {WarnUnmatchedIf, 2, 1, "[if git:branch]"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []want
			for _, w := range Lint(tc.src) {
				got = append(got, want{w.Code, w.Line, w.Col, w.Text})
				assert.NotEmpty(t, w.Message)
				assert.Equal(t, w.Text, tc.src[w.Offset:w.Offset+len(w.Text)], "Offset points at Text")
			}
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestLintMessages(t *testing.T) {
	ws := Lint("[fiel:README.md] [system:dat]")
	require.Len(t, ws, 2)
	assert.Equal(t, `1:1: unknown variable type "fiel" in [fiel:README.md] (known types: system, prompt, git, file); it renders as nothing`, ws[0].String())
	assert.Contains(t, ws[1].String(), "1:18: unknown variable system:dat in [system:dat] (the system variables are [system:time], [system:date], [system:os], [system:hostname])")
}

// The lint warns; it does not change what renders (the seed's rules).
func TestLintLeavesRenderingAlone(t *testing.T) {
	src := "[fiel:README.md]x [if git:branch]y[endif] [else] [system:dat"
	got, ok := Parse(src).Render(Values{"git:branch": "main"})
	require.True(t, ok)
	assert.Equal(t, "x y [else] [system:dat", got)
	assert.Len(t, Lint(src), 3)
}

func TestLintIsBounded(t *testing.T) {
	ws := Lint(strings.Repeat("[nope:x]\n", 1000))
	require.Len(t, ws, MaxWarnings)
	last := ws[MaxWarnings-1]
	assert.Equal(t, WarnTooMany, last.Code)
	assert.Equal(t, MaxWarnings, last.Line)
	assert.Contains(t, last.Message, "and 901 more warnings")
}
