package worker_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// test.behind changes the Turn behind the Tx's back, as its option says:
// cuts the request's message from Turn().Blocks, appends a block to it,
// writes to Turn().Data, puts a block of its own in the place of the
// request's message, swaps that message with the block before it, edits
// the system prompt in place and then replaces it through the Tx (its
// Previous the edit), or rewrites the first block after the model call.
func init() {
	profile.RegisterMiddleware("test.behind", func(s profile.MiddlewareSpec) (engine.Middleware, error) {
		var opts struct {
			Mode string `yaml:"mode"`
		}
		if err := s.Options.Decode(&opts); err != nil {
			return nil, err
		}
		return func(next engine.Handler) engine.Handler {
			return func(ctx context.Context, tx *engine.Tx) error {
				t := tx.Turn()
				switch opts.Mode {
				case "truncate":
					t.Blocks = t.Blocks[:len(t.Blocks)-1]
				case "append":
					t.Blocks = append(t.Blocks, events.Block{ID: engine.NewID(), Kind: events.KindUser, Text: "not in the log"})
				case "data":
					t.Data = map[string]string{"k": "not in the log"}
				case "replace":
					i := len(t.Blocks) - 1
					t.Blocks[i] = events.Block{ID: engine.NewID(), Kind: t.Blocks[i].Kind, Text: "not in the log"}
				case "swap":
					i := len(t.Blocks) - 1
					t.Blocks[i-1], t.Blocks[i] = t.Blocks[i], t.Blocks[i-1]
				case "edit-replace":
					// An edit in place that the next event would take as
					// the Turn's: the replacement's Previous is the edit.
					for i := range t.Blocks {
						if t.Blocks[i].Kind == events.KindSystem {
							t.Blocks[i].Text = "edited behind the Tx"
							if err := tx.Emit("test.behind", events.SystemPromptReplaced{BlockID: t.Blocks[i].ID, Text: "Be terse.", Previous: t.Blocks[i].Text}); err != nil {
								return err
							}
							break
						}
					}
				case "after":
					err := next(ctx, tx)
					t.Blocks[0].Text = "rewritten after the call"
					return err
				}
				return next(ctx, tx)
			}
		}, nil
	})
}

// TestTurnChangedBehindTheTxIsRefused: a middleware that cut a block from
// Turn().Blocks, appended one, or wrote Turn().Data had the model sent
// what the log does not hold, and the request completed (so did one that
// replaced a block with one of another ID, or swapped two; and one whose
// in-place edit a replacement then took as the Turn's stored a step that
// does not apply to the log): only replay
// --verify said so later. One that rewrote a block after the model call
// left that Turn in the worker's cache, so the conversation's next
// request stored events (a systemprompt.replaced of the rewritten text)
// that do not apply to the log, which no replay could then read. Each
// now fails its request, and the log stays one that verifies.
func TestTurnChangedBehindTheTxIsRefused(t *testing.T) {
	const yaml = `profiles:
  default:
    system_prompt: Be brief.
    middlewares: [logging, template]
`
	var profiles string
	for _, m := range behindModes {
		profiles += "  " + m + ":\n    system_prompt: Be brief.\n    middlewares: [logging, template, test.behind]\n    options:\n      test.behind: {mode: " + m + "}\n"
	}
	set, err := profile.Parse([]byte(yaml + profiles))
	require.NoError(t, err)
	l := startWorker(t, natstest.Start(t), func(c *worker.Config) { c.Profiles = set; c.AckWait = time.Second })
	ctx := context.Background()
	for _, m := range behindModes {
		t.Run(m, func(t *testing.T) {
			conv := "behind-" + m
			_, err := ask(t, l, conv, "hello")
			require.NoError(t, err, "the first request, with the default profile")
			_, err = askProfile(t, l, conv, m, "again")
			assert.ErrorIs(t, err, worker.ErrFailed, "the Turn was changed behind the Tx's back")
			_, err = ask(t, l, conv, "and once more")
			require.NoError(t, err, "the conversation goes on from the log")
			v, err := replay.Verify(ctx, l, conv)
			require.NoError(t, err)
			assert.True(t, v.OK(), "every model input is the log's: %+v", v.Mismatches)
		})
	}
}

// behindModes are test.behind's modes.
var behindModes = []string{"truncate", "append", "data", "replace", "swap", "edit-replace", "after"}

// askProfile sends one request under a profile and waits for its end.
func askProfile(t *testing.T, l *eventlog.Log, conv, profileName, text string) (worker.Result, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	turn, err := l.Load(ctx, conv)
	require.NoError(t, err)
	req, err := worker.Send(ctx, l, worker.Request{Conversation: conv, Text: text, Profile: profileName})
	require.NoError(t, err)
	return worker.Await(ctx, l, conv, req.RequestID, turn.Seq, turn.Events)
}
