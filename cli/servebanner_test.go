package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/internal/syncbuf"
	"github.com/turnlog/turnlog/profile"
)

// TestBannerDoesNotGuessAnEnginesModel: serve's banner said "model none
// set (a request must name one)" for an engine of the program's own that
// takes its model from its options, whose requests need none. A model is
// said to be missing only when the engine told its defaults.
func TestBannerDoesNotGuessAnEnginesModel(t *testing.T) {
	assert.Equal(t, "provider acme.gpt, model the engine's choice (the profile sets none)",
		describeAnswerer(profile.Summary{Provider: "acme.gpt"}))
	assert.Equal(t, "provider openai, model none set (a request must name one) at https://api.openai.com/v1",
		describeAnswerer(profile.Summary{Provider: "openai", BaseURL: "https://api.openai.com/v1", Described: true}))
	assert.Equal(t, "provider acme.gpt, model m1", describeAnswerer(profile.Summary{Provider: "acme.gpt", Model: "m1"}))
}

// A profiles file serve cannot read is reported before serve touches its
// data directory: no keys made, no store, no NATS started (an outside
// module's probe found the directory made and JetStream started before
// the message).
func TestServeRefusesABadProfilesFileFirst(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "profiles.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("default:\n  provider: [nope\n"), 0o600))
	data := filepath.Join(dir, "data")
	root := newRootCmd()
	out := &syncbuf.Buffer{}
	root.SetOut(out)
	root.SetErr(out)
	root.SetArgs([]string{"serve", "--data", data, "--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--profiles", bad})
	err := root.ExecuteContext(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "profiles.yaml")
	_, statErr := os.Stat(data)
	assert.True(t, os.IsNotExist(statErr), "the data directory was not made: %v", statErr)
}
