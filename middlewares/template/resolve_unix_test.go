//go:build unix

package template

import (
	"context"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestResolveFileFIFO checks that a named pipe in the working directory is
// not opened: opening it would block until a writer appears.
func TestResolveFileFIFO(t *testing.T) {
	cwd := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(cwd, "pipe"), 0o644))
	ref := Ref{"file", "pipe"}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, ok := mustResolve(t, ctx, []Ref{ref}, Env{Cwd: cwd}).Lookup(ref)
	assert.False(t, ok)
	assert.NoError(t, ctx.Err(), "Resolve must not have waited for the deadline")
}
