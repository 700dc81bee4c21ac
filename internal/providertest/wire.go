package providertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// RenderedAgain checks one recorded call against the bytes the server
// received, as every engine's wire test does: the recorded hash is that of
// received, the rendering version is version, and render makes received
// again byte for byte from the recorded parameters and turn. It returns
// render's block notes for the engine's own assertions; call names the
// call in failure messages.
func RenderedAgain(t testing.TB, call string, received []byte, w events.Wire, version string, render engine.WireRenderFunc, turn *projector.Turn) []engine.BlockNote {
	t.Helper()
	sum := sha256.Sum256(received)
	assert.Equal(t, hex.EncodeToString(sum[:]), w.SHA256, "%s: the hash of the bytes the server received", call)
	assert.Equal(t, version, w.Version)
	again, notes, err := render(context.Background(), []byte(w.Params), turn)
	require.NoError(t, err)
	assert.Equal(t, string(received), string(again), "%s rendered again byte for byte", call)
	return notes
}
