package middlewares_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/projector"
)

func TestRetry(t *testing.T) {
	transient := engine.Transient(errors.New("429 rate limited"))
	permanent := errors.New("400 bad request")
	tests := []struct {
		name      string
		cfg       middlewares.RetryConfig
		errs      []error // what each attempt returns; nil after the list
		wantCalls int
		wantWaits []time.Duration
		wantErr   error
	}{
		{
			name:      "success needs no retry",
			wantCalls: 1,
		},
		{
			name:      "transient errors are retried with exponential backoff",
			errs:      []error{transient, transient},
			wantCalls: 3,
			wantWaits: []time.Duration{200 * time.Millisecond, 400 * time.Millisecond},
		},
		{
			name:      "permanent errors are not retried",
			errs:      []error{permanent},
			wantCalls: 1,
			wantErr:   permanent,
		},
		{
			name:      "a transient then permanent error stops",
			errs:      []error{transient, permanent},
			wantCalls: 2,
			wantWaits: []time.Duration{200 * time.Millisecond},
			wantErr:   permanent,
		},
		{
			name:      "gives up after Attempts, waits capped at Max",
			cfg:       middlewares.RetryConfig{Attempts: 5, Base: time.Second, Max: 3 * time.Second},
			errs:      []error{transient, transient, transient, transient, transient, transient},
			wantCalls: 5,
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second},
			wantErr:   engine.ErrTransient,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var waits []time.Duration
			tc.cfg.Sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			mw := middlewares.Must(middlewares.Retry(tc.cfg))
			calls := 0
			h := mw(func(ctx context.Context, tx *engine.Tx) error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			err := h(context.Background(), txOf(t))
			if tc.wantErr == nil {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, tc.wantErr)
			}
			assert.Equal(t, tc.wantCalls, calls)
			assert.Equal(t, tc.wantWaits, waits)
		})
	}
}

func TestRetryStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	mw := middlewares.Must(middlewares.Retry(middlewares.RetryConfig{Attempts: 10, Base: time.Hour, Max: time.Hour}))
	calls := 0
	h := mw(func(ctx context.Context, tx *engine.Tx) error {
		calls++
		cancel()
		return engine.Transient(errors.New("timeout"))
	})
	done := make(chan error)
	go func() { done <- h(ctx, txOf(t)) }()
	select {
	case err := <-done:
		assert.ErrorIs(t, err, context.Canceled)
		assert.ErrorIs(t, err, engine.ErrTransient, "the last attempt's error is kept")
		assert.Equal(t, 1, calls)
	case <-time.After(5 * time.Second):
		t.Fatal("retry kept waiting after the context was cancelled")
	}
}

func TestRetryConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		cfg     middlewares.RetryConfig
		wantErr string
	}{
		{"defaults", middlewares.RetryConfig{}, ""},
		{"no retry", middlewares.RetryConfig{Attempts: 1}, ""},
		{"negative attempts", middlewares.RetryConfig{Attempts: -1}, "Attempts is -1"},
		{"max below base", middlewares.RetryConfig{Base: time.Second, Max: time.Millisecond}, "Max 1ms is below Base 1s"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := middlewares.Retry(tc.cfg)
			if tc.wantErr == "" {
				assert.NoError(t, err)
			} else {
				assert.ErrorContains(t, err, tc.wantErr)
			}
		})
	}
}

// TestRetryIsInTheLog retries a flaky model through the real chain and log:
// every attempt is recorded, so replay shows the retries.
func TestRetryIsInTheLog(t *testing.T) {
	ctx := context.Background()
	l, err := eventlog.Open(ctx, natstest.Start(t).Conn)
	require.NoError(t, err)
	failures := 2
	flaky := engine.EngineFunc(func(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
		if failures > 0 {
			failures--
			return engine.Output{}, engine.Transient(errors.New("503 overloaded"))
		}
		return scripted.New(nil).Infer(ctx, in, delta)
	})
	var waits []time.Duration
	retry := middlewares.Must(middlewares.Retry(middlewares.RetryConfig{
		Sleep: func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil },
	}))
	replace := middlewares.Must(middlewares.SystemPromptReplace(middlewares.SystemPromptReplaceConfig{Prompt: middlewares.StaticPrompt(prompt)}))

	turn, err := l.Load(ctx, "flaky")
	require.NoError(t, err)
	tx := engine.NewTx(turn, "r1", engine.WithLog(l))
	require.NoError(t, tx.Emit("worker", events.UserAppended{BlockID: engine.NewID(), Text: "hello"}))
	require.NoError(t, tx.Commit(ctx))
	require.NoError(t, engine.Loop{Handler: engine.Chain(flaky, retry, replace)}.Run(ctx, tx))
	assert.Equal(t, []time.Duration{200 * time.Millisecond, 400 * time.Millisecond}, waits)

	var got []string
	replayed := projector.New("flaky")
	for rec, err := range l.Events(ctx, "flaky") {
		require.NoError(t, err)
		got = append(got, string(rec.Type))
		switch p := rec.Payload.(type) {
		case events.InferenceStarted:
			assert.Equal(t, p.InputHash, projector.Hash(replayed))
		case events.InferenceFailed:
			assert.True(t, p.Transient)
			assert.Equal(t, "503 overloaded", p.Error)
		}
		require.NoError(t, projector.Apply(replayed, rec.Event))
	}
	assert.Equal(t, []string{
		"user.appended",
		"systemprompt.set", "inference.started", "inference.failed", // the prompt is set once, by the first attempt
		"inference.started", "inference.failed",
		"inference.started", "reasoning.appended", "llm_text.appended", "inference.finished",
	}, got)
}

// failingLog refuses every append, like a log that lost its server.
type failingLog struct{}

func (failingLog) Append(context.Context, string, uint64, ...events.Event) (uint64, error) {
	return 0, engine.Transient(errors.New("no responders"))
}

func TestRetryDoesNotRetryAFailedAppend(t *testing.T) {
	mw := middlewares.Must(middlewares.Retry(middlewares.RetryConfig{Sleep: func(context.Context, time.Duration) error { return nil }}))
	calls := 0
	h := mw(func(ctx context.Context, tx *engine.Tx) error {
		calls++
		if err := tx.Emit("test", events.UserAppended{BlockID: engine.NewID(), Text: "x"}); err != nil {
			return err
		}
		return tx.Commit(ctx)
	})
	turn := projector.New("c")
	err := h(context.Background(), engine.NewTx(turn, "r1", engine.WithLog(failingLog{})))
	assert.ErrorIs(t, err, engine.ErrTransient)
	assert.Equal(t, 1, calls, "the Tx is ahead of the log: the caller must reload, not retry")
}
