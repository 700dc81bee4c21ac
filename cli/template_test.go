package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/templates"
)

// The typos: an unknown type, an unknown fixed name left open,
// and an [if] without its [endif].
const typoTemplate = "Notes: [fiel:README.md]\nToday is [system:dat\n[if git:branch]On a branch.\n"

// Issue 23: `template set` accepted typos silently. It lists each with its
// line and column on stderr, and stores the template as before.
func TestTemplateSetPrintsWarnings(t *testing.T) {
	e := newAuditEnv(t, false)
	path := e.file("typo.txt", typoTemplate)
	out, errOut, code := e.run("", "template", "set", path)
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "template set")
	assert.Contains(t, errOut, path+`:1:8: unknown variable type "fiel" in [fiel:README.md]`)
	assert.Contains(t, errOut, path+":2:10: [system:dat is not closed by ']' on its line")
	assert.Contains(t, errOut, path+":3:1: [if git:branch] has no matching [endif]")

	got, _, code := e.run("", "template", "get")
	require.Equal(t, 0, code)
	assert.Equal(t, typoTemplate, got, "warnings do not stop a plain set")

	// A clean template: no warning at all.
	_, errOut, code = e.run("Today is [system:date].", "template", "set", "-")
	require.Equal(t, 0, code, errOut)
	assert.NotContains(t, errOut, "warning")
}

// `template set --strict` refuses a template with warnings: exit 1,
// the warnings listed, nothing stored.
func TestTemplateSetStrict(t *testing.T) {
	e := newAuditEnv(t, false)
	out, errOut, code := e.run(typoTemplate, "template", "set", "--strict", "-")
	assert.Equal(t, 1, code, "stdout: %s\nstderr: %s", out, errOut)
	assert.Contains(t, errOut, "<stdin>:1:8: unknown variable type")
	assert.Contains(t, errOut, "template not set: 3 warnings (--strict)")
	got, _, code := e.run("", "template", "get")
	require.Equal(t, 0, code)
	assert.Equal(t, templates.Default, got, "nothing was stored")

	_, errOut, code = e.run("Today is [system:date].", "template", "set", "--strict", "-")
	require.Equal(t, 0, code, errOut)
	got, _, _ = e.run("", "template", "get")
	assert.Equal(t, "Today is [system:date].", got)
}

// Issue 23: `turnlog template render --cwd /etc` printed /etc/hostname.
// The preview reads only under the cwd roots workers have (--cwd-root,
// default the current directory), and fails as a worker does.
func TestTemplateRenderAppliesCwdRoots(t *testing.T) {
	here := t.TempDir()
	t.Chdir(here)
	t.Setenv("TURNLOG_CWD_ROOTS", "")
	elsewhere := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "secret.txt"), []byte("s3cret"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(here, "notes.txt"), []byte("notes here"), 0o600))
	readsFile := filepath.Join(here, "reads.txt")
	require.NoError(t, os.WriteFile(readsFile, []byte("[file:secret.txt][file:notes.txt]"), 0o600))
	readsNothing := filepath.Join(here, "plain.txt")
	require.NoError(t, os.WriteFile(readsNothing, []byte("Model [prompt:model]."), 0o600))

	for _, tc := range []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{name: "outside the default root", args: []string{"--file", readsFile, "--cwd", elsewhere}, wantCode: 1,
			wantErr: `render: the request's cwd is outside the directories this worker's template variables may read: "` + elsewhere + `" is not under ` + here},
		{name: "/etc", args: []string{"--file", readsFile, "--cwd", "/etc"}, wantCode: 1, wantErr: `"/etc" is not under`},
		{name: "under the default root", args: []string{"--file", readsFile, "--cwd", "."}, wantOut: "notes here\n"},
		{name: "a root given", args: []string{"--file", readsFile, "--cwd", elsewhere, "--cwd-root", elsewhere}, wantOut: "s3cret\n"},
		{name: "a template that reads no directory", args: []string{"--file", readsNothing, "--cwd", "/etc", "--model", "m1"}, wantOut: "Model m1.\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, code := runCmd(t, nil, "", append([]string{"template", "render"}, tc.args...)...)
			assert.Equal(t, tc.wantCode, code, out)
			if tc.wantOut != "" {
				assert.Equal(t, tc.wantOut, out)
			}
			assert.Contains(t, out, tc.wantErr)
			if tc.wantCode != 0 {
				assert.NotContains(t, out, "s3cret", "nothing was read")
			}
		})
	}

	t.Run("env TURNLOG_CWD_ROOTS", func(t *testing.T) {
		t.Setenv("TURNLOG_CWD_ROOTS", elsewhere)
		out, code := runCmd(t, nil, "", "template", "render", "--file", readsFile, "--cwd", elsewhere)
		assert.Equal(t, 0, code, out)
		assert.Contains(t, out, "s3cret")
	})
}

// The data directory's keys are never read by a preview, whatever the
// cwd and roots, as for workers.
func TestTemplateRenderNeverReadsTheKeys(t *testing.T) {
	here := t.TempDir()
	t.Chdir(here)
	t.Setenv("TURNLOG_DATA", "")
	require.NoError(t, os.MkdirAll(filepath.Join(here, ".turnlog", "auth"), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(here, ".turnlog", "auth", "admin.nk"), []byte("SUADMINSEED"), 0o600))
	tpl := filepath.Join(here, "t.txt")
	require.NoError(t, os.WriteFile(tpl, []byte("[if file:.turnlog/auth/admin.nk]key: [file:.turnlog/auth/admin.nk][else]no key[endif]"), 0o600))
	out, code := runCmd(t, nil, "", "template", "render", "--file", tpl, "--cwd", ".")
	assert.Equal(t, 0, code, out)
	assert.Equal(t, "no key\n", out)
}

// render lists the warnings too: on stderr, or in --json.
func TestTemplateRenderWarnings(t *testing.T) {
	here := t.TempDir()
	t.Chdir(here)
	tpl := filepath.Join(here, "t.txt")
	require.NoError(t, os.WriteFile(tpl, []byte(typoTemplate), 0o600))
	out, code := runCmd(t, nil, "", "template", "render", "--file", tpl)
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, tpl+":2:10: [system:dat is not closed")

	var doc struct {
		Prompt   string             `json:"prompt"`
		Warnings []template.Warning `json:"warnings"`
	}
	jsonOut, code := runCmdStdout(t, "template", "render", "--file", tpl, "--json")
	require.Equal(t, 0, code, jsonOut)
	require.NoError(t, json.Unmarshal([]byte(jsonOut), &doc), jsonOut)
	require.Len(t, doc.Warnings, 3)
	assert.Equal(t, template.WarnUnknownType, doc.Warnings[0].Code)
	assert.Equal(t, 1, doc.Warnings[0].Line)
	assert.Equal(t, 8, doc.Warnings[0].Col)
}

// runCmdStdout runs a command that needs no server and returns its stdout
// alone, and its exit code.
func runCmdStdout(t *testing.T, args ...string) (string, int) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&errOut)
	root.SetArgs(args)
	err := root.Execute()
	var ee *exitError
	switch {
	case errors.As(err, &ee):
		return out.String(), ee.code
	case err != nil:
		return out.String() + errOut.String() + err.Error(), 2
	}
	return out.String(), 0
}
