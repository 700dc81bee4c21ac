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
