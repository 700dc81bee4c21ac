package cli

import (
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/worker"
)

// twoProfiles is a profiles file with the scripted engine as the default
// and an OpenAI-compatible server as "local", whose model comes from the
// environment.
const twoProfiles = `profiles:
  default:
    provider: scripted
    middlewares: [logging]
  local:
    provider: openai
    base_url: http://127.0.0.1:11434/v1
    middlewares: [logging]
`

// TestStatusListsEachProfilesModel (issue 23, item 5): neither serve's
// banner nor status said which provider and model answer. status lists
// every profile the workers run with its provider, model and base URL, in
// text and in JSON.
func TestStatusListsEachProfilesModel(t *testing.T) {
	t.Setenv("OPENAI_MODEL", "llama3.2")
	e := newAuditEnv(t, false)
	profiles, err := profile.Parse([]byte(twoProfiles))
	require.NoError(t, err)
	runWorker(t, worker.Config{Log: e.log, Conn: e.log.JetStream().Conn(), Profiles: profiles,
		ShutdownGrace: time.Second, Logger: slog.New(slog.DiscardHandler)})

	want := []profile.Summary{
		{Name: "default", Provider: "scripted", Model: "scripted"},
		{Name: "local", Provider: "openai", Model: "llama3.2", BaseURL: "http://127.0.0.1:11434/v1"},
	}
	var st struct {
		Profiles []profile.Summary `json:"profiles"`
	}
	eventually(t, "the worker answers status", func() bool {
		out, errOut, code := e.run("", "status", "--json")
		require.Equal(t, 0, code, errOut)
		require.NoError(t, json.Unmarshal([]byte(out), &st), out)
		return len(st.Profiles) > 0
	})
	assert.Equal(t, want, st.Profiles)
	var raw struct {
		Profiles []map[string]any `json:"profiles"`
	}
	out, _, _ := e.run("", "status", "--json")
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	assert.Equal(t, map[string]any{"name": "default", "provider": "scripted", "model": "scripted", "base_url": ""}, raw.Profiles[0], "every key, empty ones too")

	out, errOut, code := e.run("", "status")
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `PROFILE\s+PROVIDER\s+MODEL\s+BASE URL`, out)
	assert.Regexp(t, `\ndefault\s+scripted\s+scripted\s+-\n`, out)
	assert.Regexp(t, `\nlocal\s+openai\s+llama3.2\s+http://127.0.0.1:11434/v1\n`, out)
}

// TestServeBannerNamesTheDefaultModel (issue 23, item 5): serve's banner
// says which provider and model answer by default.
func TestServeBannerNamesTheDefaultModel(t *testing.T) {
	s := startServe(t)
	assert.Contains(t, s.out.String(), `the workers answer chat requests (turnlog chat, the console) with profile "default": provider scripted, model scripted`)

	file := filepath.Join(t.TempDir(), "profiles.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`profiles:
  default:
    provider: anthropic
    model: claude-sonnet-4-5
    base_url: http://127.0.0.1:9/
    middlewares: [logging]
`), 0o600))
	s = startServe(t, "--profiles", file)
	assert.Contains(t, s.out.String(), `the workers answer chat requests (turnlog chat, the console) with profile "default": provider anthropic, model claude-sonnet-4-5 at http://127.0.0.1:9/`)
}
