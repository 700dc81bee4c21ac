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
