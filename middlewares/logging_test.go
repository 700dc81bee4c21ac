package middlewares_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/middlewares"
)

func TestLogging(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantLevel string
	}{
		{"a call that succeeded", nil, "INFO"},
		{"a call that failed", errors.New("rate limited"), "ERROR"},
		// A request refused for what it carries is the sender's mistake,
		// told to the sender by request.failed: not an error of the worker.
		{"a request whose cwd is outside the roots", fmt.Errorf("template: %w", middlewares.ErrCwdOutsideRoots), "WARN"},
		{"a request with a reserved data key", fmt.Errorf("data: %w", middlewares.ErrReservedData), "WARN"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			mw := middlewares.Must(middlewares.Logging(middlewares.LoggingConfig{Logger: slog.New(slog.NewJSONHandler(&buf, nil))}))
			tx := txOf(t, user("u1", "hi"))
			tx.SetModel("gpt-test")
			h := mw(func(ctx context.Context, tx *engine.Tx) error { return tc.err })
			err := h(context.Background(), tx)
			assert.Equal(t, tc.err, err, "the error passes through unchanged")
			assert.Empty(t, tx.Pending(), "logging emits no events")

			var rec map[string]any
			require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), buf.String())
			assert.Equal(t, tc.wantLevel, rec["level"])
			assert.Equal(t, "model call", rec["msg"])
			assert.Equal(t, "c", rec["conversation"])
			assert.Equal(t, "r1", rec["cause"])
			assert.Equal(t, float64(0), rec["step"])
			assert.Equal(t, "gpt-test", rec["model"])
			assert.Equal(t, float64(1), rec["blocks"])
			assert.Contains(t, rec, "duration")
			if tc.err != nil {
				assert.Equal(t, tc.err.Error(), rec["error"])
			} else {
				assert.NotContains(t, rec, "error")
			}
		})
	}
}

func TestLoggingBelowLevelWritesNothing(t *testing.T) {
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	mw := middlewares.Must(middlewares.Logging(middlewares.LoggingConfig{Logger: logger}))
	called, _, err := run(t, mw, txOf(t))
	require.NoError(t, err)
	assert.True(t, called)
	assert.Empty(t, buf.String())
}
