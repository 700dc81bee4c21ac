package cli

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/worker"
)

// runWorker runs a worker made with cfg until the test ends, as `turnlog
// worker` beside the command under test would.
func runWorker(t *testing.T, cfg worker.Config) {
	t.Helper()
	w, err := worker.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}
