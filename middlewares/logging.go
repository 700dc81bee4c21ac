package middlewares

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/turnlog/turnlog/engine"
)

// LoggingConfig configures Logging.
type LoggingConfig struct {
	// Logger receives the records (default slog.Default()).
	Logger *slog.Logger
	// Level of a call that succeeded, or whose step was superseded by
	// another writer or got no answer from the log (engine.ErrSuperseded,
	// engine.ErrLogUnavailable: retried; default slog.LevelInfo); a call
	// that failed transiently (retried), or was refused for what its
	// request carries (ErrCwdOutsideRoots, ErrReservedData), at
	// slog.LevelWarn at least, and any other failure at slog.LevelError.
	Level slog.Level
	// Message of every record (default "model call").
	Message string
}

func (c *LoggingConfig) setDefaults() {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Message == "" {
		c.Message = "model call"
	}
}

// Validate reports the first setting that cannot work; every setting can.
func (c LoggingConfig) Validate() error { return nil }

// Logging writes one slog record per model call: conversation, cause
// (request ID), step, model, number of input blocks, duration and error.
// Use it outermost in production chains, so the duration covers the whole
// chain and the record names every failure; it emits no events (the log
// already records inference.started and inference.finished/failed, with
// the model's own duration).
func Logging(cfg LoggingConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			step, blocks := tx.Step(), len(tx.Turn().Blocks)
			begin := time.Now()
			err := next(ctx, tx)
			level := cfg.Level
			switch {
			case err == nil, errors.Is(err, engine.ErrSuperseded), errors.Is(err, engine.ErrLogUnavailable):
				// Another worker writing first, or a log that did not
				// answer, is recovered from (the request reloads, or is
				// retried later) and counted by the worker's
				// turnlog_conflicts_total and turnlog_requests_total
				// {outcome="retried"}: not an error.
			case errors.Is(err, ErrCwdOutsideRoots), errors.Is(err, ErrReservedData):
				// Refused for what the request carries: the sender's
				// mistake, told to the sender by request.failed, not a
				// fault of this worker.
				level = max(level, slog.LevelWarn)
			case engine.IsTransient(err):
				// Worth a retry (a timeout, a rate limit): the request is
				// tried again, and ends as request.failed only if the
				// retries do not cure it.
				level = max(level, slog.LevelWarn)
			default:
				level = slog.LevelError
			}
			if !cfg.Logger.Enabled(ctx, level) {
				return err
			}
			attrs := []slog.Attr{
				slog.String("conversation", tx.Turn().Conversation),
				slog.String("cause", tx.Cause()),
				slog.Int("step", step),
				slog.String("model", tx.Model()),
				slog.Int("blocks", blocks),
				slog.Duration("duration", time.Since(begin)),
			}
			if err != nil {
				attrs = append(attrs, slog.String("error", err.Error()))
			}
			cfg.Logger.LogAttrs(ctx, level, cfg.Message, attrs...)
			return err
		}
	}, nil
}
