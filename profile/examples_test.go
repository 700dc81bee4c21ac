package profile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/profile"
)

func TestBuiltInProfilesBuild(t *testing.T) {
	set, err := profile.BuiltIn()
	require.NoError(t, err, "the default and the examples agree on the profiles both name")
	assert.Contains(t, set.Names(), profile.DefaultName)
	assert.GreaterOrEqual(t, len(set), 6)
	for _, name := range set.Names() {
		_, err := set[name].Build(nil, nil)
		assert.NoError(t, err, name)
	}
}

func TestPromptPolicyIsChecked(t *testing.T) {
	_, err := profile.Parse([]byte("profiles:\n  p:\n    prompt_policy: overwrite\n    middlewares: [systemprompt]\n"))
	assert.ErrorContains(t, err, `profile "p": prompt_policy: prompt policy "overwrite": use "keep" (the default) or "replace"`)
}

func TestAllowRequestDataNamesReservedKeysOnly(t *testing.T) {
	_, err := profile.Parse([]byte("profiles:\n  p:\n    allow_request_data: [tz]\n    middlewares: [template]\n"))
	assert.ErrorContains(t, err, `allow_request_data: "tz" is not a reserved key`)
	set, err := profile.Parse([]byte("profiles:\n  p:\n    allow_request_data: [systemprompt.none]\n    middlewares: [template]\n"))
	require.NoError(t, err)
	assert.NoError(t, set["p"].CheckRequestData(map[string]string{"systemprompt.none": "x", "tz": "UTC"}))
	assert.Error(t, set["p"].CheckRequestData(map[string]string{"trust.operator": "x"}))
}

// TestDemoToolOnlyForTheScriptedEngine: every profile built without tools
// offered the scripted engine's demo tool, word_count, to real models too
// (found by the library probe: an OpenAI request body held it).
func TestDemoToolOnlyForTheScriptedEngine(t *testing.T) {
	set, err := profile.Parse([]byte("profiles:\n  demo:\n    provider: scripted\n  real:\n    provider: openai\n    base_url: http://127.0.0.1:1/v1\n    model: m\n" +
		"  given:\n    provider: openai\n    base_url: http://127.0.0.1:1/v1\n    model: m\n    tools: [word_count]\n"))
	require.NoError(t, err)
	demo, err := set["demo"].Build(nil, nil)
	require.NoError(t, err)
	require.Len(t, demo.Tools.Specs(), 1)
	assert.Equal(t, "word_count", demo.Tools.Specs()[0].Name)
	real, err := set["real"].Build(nil, nil)
	require.NoError(t, err)
	assert.Empty(t, real.Tools.Specs(), "a real model is offered no tool it was not given")
	given, err := set["given"].Build(nil, nil)
	require.NoError(t, err)
	require.Len(t, given.Tools.Specs(), 1, "unless the profile names it")

	_, err = profile.Parse([]byte("profiles:\n  p:\n    tools: [rm_rf]\n"))
	assert.ErrorContains(t, err, `tools: tool "rm_rf" is not registered in this binary (it has `)
}
