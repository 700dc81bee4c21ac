package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestRenderReadsOnlyWhereWorkersMay: POST /system-prompt/render reads
// files only under Config.CwdRoots (403 elsewhere, naming the setting),
// as a worker reads a request's cwd, and never in Config.DenyDirs, whose
// files are as absent as missing ones. Before, a preview read any file the
// server's user could read, the NATS keys among them.
func TestRenderReadsOnlyWhereWorkersMay(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	secrets := filepath.Join(root, "data", "auth")
	require.NoError(t, os.MkdirAll(secrets, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(secrets, "admin.nk"), []byte("SUSEED"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("Project rules."), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(elsewhere, "AGENTS.md"), []byte("Someone else's notes."), 0o600))

	srv := natstest.Start(t)
	l, err := eventlog.Open(context.Background(), srv.Conn)
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token, CwdRoots: []string{root}, DenyDirs: []string{secrets}})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)

	tests := []struct {
		name, template, cwd string
		status              int
		prompt              string // the prompt when status is 200
	}{
		{"a file under the roots", "[file:AGENTS.md]", root, http.StatusOK, "Project rules."},
		{"a cwd outside the roots", "[file:AGENTS.md]", elsewhere, http.StatusForbidden, ""},
		{"git outside the roots", "[git:branch]", elsewhere, http.StatusForbidden, ""},
		{"no file read: any cwd", "[prompt:model]", elsewhere, http.StatusOK, ""},
		{"the denied directory as cwd", "[if file:admin.nk]seed: [file:admin.nk][else]none[endif]", secrets, http.StatusOK, "none"},
		{"the denied directory by name", "[if file:data/auth/admin.nk]seed: [file:data/auth/admin.nk][else]none[endif]", root, http.StatusOK, "none"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body, err := json.Marshal(map[string]string{"template": tc.template, "cwd": tc.cwd})
			require.NoError(t, err)
			status, out, _ := call(t, ts, "POST", "/system-prompt/render", "Bearer "+token, string(body))
			require.Equal(t, tc.status, status, "%v", out)
			if status != http.StatusOK {
				assert.Contains(t, out["error"], tc.cwd, "the error names the cwd")
				assert.Contains(t, out["error"], "cwd_roots", "and the setting")
				assert.NotContains(t, out["error"], "Someone else's notes.")
				return
			}
			assert.Equal(t, tc.prompt, out["prompt"])
		})
	}

	_, err = httpapi.New(httpapi.Config{Log: l, CwdRoots: []string{"relative"}})
	assert.ErrorContains(t, err, `"relative"`)
}
