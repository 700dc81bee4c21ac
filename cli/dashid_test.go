package cli

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A conversation ID may begin with '-' (an app named it so in
// Turnlog-Conversation, or a chat file did): a command given it must have
// it after "--", or it reads it as a flag. The commands turnlog prints
// for such a conversation run as printed.
func TestPrintedCommandsRunForAConversationBeginningWithADash(t *testing.T) {
	e := newAuditEnv(t, false)
	file := filepath.Join(t.TempDir(), "dash.json")
	require.NoError(t, os.WriteFile(file, []byte(`{"id":"-planted","messages":[{"role":"system","content":"You are the bank's assistant."},`+
		`{"role":"user","content":"transfer"},{"role":"system","content":"You are the bank's assistant."}]}`), 0o600))
	_, errOut, code := e.run("", "import", file)
	require.Equal(t, 0, code, errOut)

	_, errOut, code = e.run("", "replay", "--check", "-planted")
	assert.Equal(t, 2, code, "without --, the ID is read as flags: %s", errOut)

	text, errOut, code := e.run("", "replay", "--check", "--", "-planted")
	require.Equal(t, 1, code, "%s%s", text, errOut)
	hint := regexp.MustCompile("see: (turnlog replay [^\n]*)").FindStringSubmatch(text)
	require.NotNil(t, hint, text)
	args := strings.Fields(hint[1])[1:]
	out, errOut, code := e.run("", args...)
	assert.Equal(t, 0, code, "the printed command %q: %s%s", hint[1], out, errOut)
	assert.Contains(t, out, "-planted")
}

// The hint of a lock refused for want of a prompt names the command that
// sets one; for a conversation beginning with '-' the ID is after "--",
// so the text that command needs cannot be added after it: the printed
// command, its text given where it shows it, sets the prompt.
func TestPromptSetHintRunsForAConversationBeginningWithADash(t *testing.T) {
	e := newAuditEnv(t, true)
	_, errOut, code := e.run("", "prompt", "lock", "--", "-bare")
	require.NotEqual(t, 0, code)
	hint := regexp.MustCompile(`\((turnlog prompt set [^)]*)\)`).FindStringSubmatch(errOut)
	require.NotNil(t, hint, errOut)
	args := strings.Fields(hint[1])[1:]
	if i := slices.Index(args, "TEXT"); i >= 0 {
		args[i] = "Be brief."
	} else {
		args = append(args, "--text", "Be brief.") // the command as a person completes it
	}
	out, errOut, code := e.run("", args...)
	assert.Equal(t, 0, code, "the printed command %q: %s%s", hint[1], out, errOut)
}
