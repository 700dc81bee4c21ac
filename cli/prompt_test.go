package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/operator"
)

// TestPromptCommands runs turnlog prompt as an operator would: set from
// standard input, lock, try to set a locked prompt, show, unlock.
func TestPromptCommands(t *testing.T) {
	e := newAuditEnv(t, true)
	e.ask("c1", "hello")

	out, errOut, code := e.run("You are the operator's assistant.\n", "prompt", "set", "c1", "--file", "-", "--as", "ada", "--reason", "ticket 42")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "c1: prompt")
	assert.Contains(t, out, "set ([systemprompt.replaced]")

	out, errOut, code = e.run("", "prompt", "lock", "c1", "--as", "ada")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "locked ([systemprompt.locked]")

	_, errOut, code = e.run("", "prompt", "set", "c1", "--text", "Other.", "--as", "bob")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "locked (by operator:ada); unlock it first (turnlog prompt unlock c1)")

	e.ask("c1", "still there?")
	out, errOut, code = e.run("", "prompt", "show", "c1", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var v operator.PromptView
	require.NoError(t, json.Unmarshal([]byte(out), &v))
	require.NotNil(t, v.SystemPrompt)
	assert.Equal(t, "You are the operator's assistant.\n", v.SystemPrompt.Text, "kept through the next request")
	assert.Equal(t, "operator", v.SystemPrompt.Source)
	assert.Equal(t, "operator:ada", v.SystemPrompt.LockedBy)
	assert.Equal(t, "operator:ada", v.SystemPrompt.ReplacedBy)

	out, errOut, code = e.run("", "prompt", "show", "c1")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `source "operator"`)
	assert.Contains(t, out, "by operator:ada")
	assert.Contains(t, out, "| You are the operator's assistant.")

	out, errOut, code = e.run("", "prompt", "unlock", "c1", "--as", "bob", "-o", "json")
	require.Equal(t, 0, code, errOut)
	var res operator.Result
	require.NoError(t, json.Unmarshal([]byte(out), &res))
	assert.True(t, res.Changed)

	_, errOut, code = e.run("", "prompt", "set", "c1", "--as", "bob")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "give the prompt with --text or --file")
	_, errOut, code = e.run("", "prompt", "lock", "c1", "--as", "b b")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "--as")
	_, errOut, code = e.run("", "prompt", "show", "nope")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "nope")
}

// TestPromptShowErrorNamesItsCommand (issue 23, item 6): `prompt show` of
// a conversation that does not exist failed with "replay nosuch: ...",
// naming a command the user did not run.
func TestPromptShowErrorNamesItsCommand(t *testing.T) {
	e := newAuditEnv(t, false)
	_, errOut, code := e.run("", "prompt", "show", "nosuch")
	assert.Equal(t, 2, code)
	assert.True(t, strings.HasPrefix(errOut, "prompt show nosuch: "), errOut)
	assert.NotContains(t, errOut, "replay")
	assert.Contains(t, errOut, "turnlog ls", "says where the conversations are listed")
}
