package profile_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine/anthropic"
	"github.com/turnlog/turnlog/engine/responses"
	"github.com/turnlog/turnlog/profile"
)

func TestProviders(t *testing.T) {
	set, err := profile.Parse([]byte(`profiles:
  default:
    provider: openai_responses
    base_url: https://api.openai.com/v1
    model: gpt-5-mini
    api_key_env: MY_OPENAI_KEY
    max_tokens: 4000
    reasoning_effort: low
    reasoning_summary: detailed
    middlewares: [retry, ordering, reasoningguard]
  claude:
    provider: anthropic
    base_url: https://api.anthropic.com
    model: claude-sonnet-4-5
    api_key_env: MY_ANTHROPIC_KEY
    thinking: "4096"
    middlewares: [retry, ordering, reasoningguard]
`))
	require.NoError(t, err)
	t.Setenv("MY_OPENAI_KEY", "sk-1")
	t.Setenv("MY_ANTHROPIC_KEY", "sk-ant-1")
	for name, want := range map[string]any{"default": &responses.Engine{}, "claude": &anthropic.Engine{}} {
		b, err := set[name].Build(slog.New(slog.DiscardHandler), nil)
		require.NoError(t, err, name)
		assert.IsType(t, want, b.Engine, name)
	}

	cases := []struct {
		name, yaml, want string
	}{
		{name: "unknown provider", yaml: "provider: claude", want: `provider "claude" is not registered in this binary (it has anthropic, example.upper, openai, openai_responses, scripted, test.echo); use one of those, or build a binary that imports the package registering "claude" and calls cli.Main: see docs/library.md`},
		{name: "thinking on openai_responses", yaml: "provider: openai_responses\n    thinking: adaptive", want: "thinking applies to provider anthropic, not openai_responses"},
		{name: "reasoning effort on anthropic", yaml: "provider: anthropic\n    reasoning_effort: low", want: "reasoning_effort applies to provider openai_responses"},
		{name: "max_tokens on scripted", yaml: "max_tokens: 10", want: "max_tokens applies to provider openai_responses and anthropic, not scripted"},
		{name: "bad thinking", yaml: "provider: anthropic\n    thinking: lots", want: `thinking "lots": use off, adaptive, or a budget`},
		{name: "budget above max_tokens", yaml: "provider: anthropic\n    max_tokens: 2000\n    thinking: \"4096\"", want: "must be at least 1024 and below max tokens (2000)"},
		{name: "anthropic base URL with /v1", yaml: "provider: anthropic\n    base_url: https://api.anthropic.com/v1", want: "drop the /v1"},
		{name: "bad effort", yaml: "provider: openai_responses\n    reasoning_effort: extreme", want: `reasoning effort "extreme"`},
		{name: "a key instead of a variable name", yaml: "provider: anthropic\n    api_key_env: \"sk-ant abc\"", want: "must be the NAME of an environment variable"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := profile.Parse([]byte("profiles:\n  default:\n    " + tc.yaml + "\n    middlewares: []\n"))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
