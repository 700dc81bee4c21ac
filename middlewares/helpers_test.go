package middlewares_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// txOf starts an in-memory Tx (no log) on a Turn holding blocks, as a fork
// or an import would: conversation.started with the blocks.
func txOf(t testing.TB, blocks ...events.Block) *engine.Tx {
	t.Helper()
	turn := projector.New("c")
	if len(blocks) > 0 {
		e := events.New("c", "setup", 0, "test", events.ConversationStarted{Blocks: blocks})
		require.NoError(t, projector.Apply(turn, e))
	}
	return engine.NewTx(turn, "r1")
}

// run wraps a closure with mw, runs it once on tx and commits (in memory),
// the way watermill tests a middleware. It reports whether the closure ran
// and which events the middleware emitted.
func run(t testing.TB, mw engine.Middleware, tx *engine.Tx) (called bool, emitted []events.Event, err error) {
	t.Helper()
	h := mw(func(ctx context.Context, tx *engine.Tx) error {
		called = true
		return nil
	})
	err = h(context.Background(), tx)
	emitted = append(emitted, tx.Pending()...)
	require.NoError(t, tx.Commit(context.Background()))
	return called, emitted, err
}

// runTwice runs mw, then again on its own result, and returns the events
// of each run.
func runTwice(t testing.TB, mw engine.Middleware, tx *engine.Tx) (first, second []events.Event) {
	t.Helper()
	called, first, err := run(t, mw, tx)
	require.NoError(t, err)
	require.True(t, called, "the middleware must call the next handler")
	called, second, err = run(t, mw, tx)
	require.NoError(t, err)
	require.True(t, called)
	return first, second
}

func typesOf(evs []events.Event) []events.Type {
	out := []events.Type{}
	for _, e := range evs {
		out = append(out, e.Type)
	}
	return out
}

func kindsOf(bs []events.Block) []events.Kind {
	var out []events.Kind
	for _, b := range bs {
		out = append(out, b.Kind)
	}
	return out
}

func idsOf(bs []events.Block) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.ID)
	}
	return out
}

func sys(id, text string, meta ...string) events.Block {
	return events.Block{ID: id, Kind: events.KindSystem, Text: text, Trust: events.Trusted, Meta: metaOf(meta...)}
}

func user(id, text string, meta ...string) events.Block {
	return events.Block{ID: id, Kind: events.KindUser, Text: text, Meta: metaOf(meta...)}
}

func llm(id, text string) events.Block {
	return events.Block{ID: id, Kind: events.KindLLMText, Text: text}
}

func reasoning(id string) events.Block {
	return events.Block{ID: id, Kind: events.KindReasoning, Text: "thinking " + id}
}

func call(id, callID string) events.Block {
	return events.Block{ID: id, Kind: events.KindToolCall, CallID: callID, ToolName: "word_count", Arguments: `{"text":"a b"}`}
}

func result(id, callID string) events.Block {
	return events.Block{ID: id, Kind: events.KindToolResult, CallID: callID, Text: "2"}
}

func metaOf(kv ...string) map[string]string {
	if len(kv) == 0 {
		return nil
	}
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}
