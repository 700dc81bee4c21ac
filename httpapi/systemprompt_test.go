package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/httpapi"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/templates"
)

// TestRenderIsCapped is issue 15's reproduction: a 56 KB body
// '[file:big.txt]' x 4000, with a 56 KB big.txt, made POST
// /system-prompt/render answer 262 MB (and the server reach ~2 GB). The
// rendering stops at the prompt cap and the answer says which cap and
// which variable.
func TestRenderIsCapped(t *testing.T) {
	ts, _ := startAPI(t, token)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat("x", 56<<10)), 0o600))
	in, err := json.Marshal(map[string]string{"template": strings.Repeat("[file:big.txt]", 4000), "cwd": dir})
	require.NoError(t, err)

	req, err := http.NewRequest("POST", ts.URL+"/system-prompt/render", strings.NewReader(string(in)))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(io.LimitReader(res.Body, 1<<20+1))
	require.NoError(t, err)
	require.LessOrEqual(t, len(body), 1<<20, "the answer is not capped")

	assert.Equal(t, http.StatusBadRequest, res.StatusCode)
	var out map[string]any
	require.NoError(t, json.Unmarshal(body, &out))
	assert.Contains(t, out["error"], "[file:big.txt]", "the error names the variable")
	assert.Contains(t, out["error"], "262144", "and the cap")
}

// TestTemplateOutage: when the templates store cannot be read (here its
// bucket is gone), GET /system-prompt answers the built-in default with a
// header saying so, and PUT answers 503 (the seed's contract), not 500.
func TestTemplateOutage(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	l, err := eventlog.Open(ctx, srv.Conn)
	require.NoError(t, err)
	api, err := httpapi.New(httpapi.Config{Log: l, Token: token})
	require.NoError(t, err)
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	auth := "Bearer " + token

	status, body, header := call(t, ts, "GET", "/system-prompt", auth, "")
	require.Equal(t, http.StatusOK, status)
	assert.Equal(t, httpapi.TemplateSourceStore, header.Get(httpapi.HeaderTemplateSource), "the store answered")
	status, _, _ = call(t, ts, "PUT", "/system-prompt", auth, `{"template": "Stored."}`)
	require.Equal(t, http.StatusOK, status)

	require.NoError(t, l.JetStream().DeleteKeyValue(ctx, l.Names().TemplatesBucket))

	status, body, header = call(t, ts, "GET", "/system-prompt", auth, "")
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, templates.Default, body["template"])
	assert.Equal(t, true, body["default"])
	assert.Contains(t, body["unavailable"], "templates store cannot be read", "and the body too, for the console")
	assert.Equal(t, httpapi.TemplateSourceDefault, header.Get(httpapi.HeaderTemplateSource), "the answer says it is the fallback")

	status, body, header = call(t, ts, "PUT", "/system-prompt", auth, `{"template": "New."}`)
	assert.Equal(t, http.StatusServiceUnavailable, status)
	assert.Contains(t, body["error"], "templates store is unavailable")
	assert.NotEmpty(t, header.Get("Retry-After"))

	status, body, _ = call(t, ts, "POST", "/system-prompt/render", auth, `{}`)
	assert.Equal(t, http.StatusServiceUnavailable, status, "the stored template cannot be rendered: %v", body)
	status, body, _ = call(t, ts, "POST", "/system-prompt/render", auth, `{"template": "Given."}`)
	assert.Equal(t, http.StatusOK, status)
	assert.Equal(t, "Given.", body["prompt"], "a template given in the body needs no store")

	status, _, _ = call(t, ts, "GET", "/system-prompt/variables", auth, "")
	assert.Equal(t, http.StatusOK, status, "the catalog is static")
}

// Issue 23: PUT /system-prompt and the preview accepted typos silently.
// Both answer a "warnings" array, each warning with its code and
// position; the template is stored (and rendered) all the same.
func TestSystemPromptWarnings(t *testing.T) {
	ts, store := startAPI(t, token)
	const tmpl = "Notes: [fiel:README.md]\nToday is [system:dat\n[if git:branch]On a branch.\n"
	in, err := json.Marshal(map[string]string{"template": tmpl})
	require.NoError(t, err)

	type warning struct {
		Code      string
		Offset    int
		Line, Col int
		Text      string
	}
	want := []warning{
		{"unknown_type", 7, 1, 8, "[fiel:README.md]"},
		{"unterminated_tag", 33, 2, 10, "[system:dat"},
		{"unmatched_if", 45, 3, 1, "[if git:branch]"},
	}
	warningsOf := func(raw []byte) []warning {
		var doc struct {
			Warnings []map[string]any `json:"warnings"`
		}
		require.NoError(t, json.Unmarshal(raw, &doc), string(raw))
		var out []warning
		for _, w := range doc.Warnings {
			assert.NotEmpty(t, w["message"])
			out = append(out, warning{w["code"].(string), int(w["offset"].(float64)), int(w["line"].(float64)), int(w["col"].(float64)), w["text"].(string)})
		}
		return out
	}

	status, raw := callRaw(t, ts, "PUT", "/system-prompt", string(in))
	require.Equal(t, http.StatusOK, status, string(raw))
	assert.Equal(t, want, warningsOf(raw))
	stored, err := store.Template(context.Background())
	require.NoError(t, err)
	assert.Equal(t, tmpl, stored, "stored all the same")

	status, raw = callRaw(t, ts, "POST", "/system-prompt/render", string(in))
	require.Equal(t, http.StatusOK, status, string(raw))
	assert.Equal(t, want, warningsOf(raw), "the preview lists them as the template is typed")
	var doc httpapi.RenderResponse
	require.NoError(t, json.Unmarshal(raw, &doc))
	assert.Equal(t, "Notes: \nToday is [system:dat\n[if git:branch]On a branch.\n", doc.Prompt, "rendering is unchanged")

	status, raw = callRaw(t, ts, "POST", "/system-prompt/render", `{}`)
	require.Equal(t, http.StatusOK, status, string(raw))
	assert.Equal(t, want, warningsOf(raw), "the stored template's warnings")
}

// callRaw sends an authorized request and returns the status and body.
func callRaw(t *testing.T, ts *httptest.Server, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, raw
}
