package replay_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

// openTestLog starts an embedded server and opens the log on it.
func openTestLog(tb testing.TB) *eventlog.Log {
	tb.Helper()
	l, err := eventlog.Open(context.Background(), natstest.Start(tb).Conn)
	require.NoError(tb, err)
	return l
}

// convo writes a conversation the way a worker does, with whatever loop a
// test gives each request, and keeps its current Turn.
type convo struct {
	tb   testing.TB
	log  *eventlog.Log
	turn *projector.Turn
	// model is the model the requests ask for, as a worker passes the
	// profile's ("": none).
	model string
}

func newConvo(tb testing.TB, l *eventlog.Log, conv string) *convo {
	return &convo{tb: tb, log: l, turn: projector.New(conv)}
}

// request serves one chat request like worker.serveOnce: step 0 is the
// user's message (and data), then the loop, then request.completed, or
// request.failed on the Turn as the log has it. It returns the cause.
func (c *convo) request(loop engine.Loop, text string, data map[string]string) string {
	c.tb.Helper()
	ctx := context.Background()
	cause := ulid.Make().String()
	tx := engine.NewTx(c.turn, cause, engine.WithLog(c.log), engine.WithTools(loop.Tools.Specs()...), engine.WithModel(c.model))
	require.NoError(c.tb, tx.Emit(replay.ActorWorker, events.UserAppended{BlockID: engine.NewID(), Text: text}))
	if len(data) > 0 {
		require.NoError(c.tb, tx.Emit(replay.ActorWorker, events.DataSet{Values: data}))
	}
	require.NoError(c.tb, tx.Commit(ctx))
	if err := loop.Run(ctx, tx); err != nil {
		turn, lerr := c.log.Load(ctx, c.turn.Conversation)
		require.NoError(c.tb, lerr)
		fresh := engine.NewTx(turn, cause, engine.WithLog(c.log), engine.WithStep(tx.Step()))
		require.NoError(c.tb, fresh.Emit(replay.ActorWorker, events.RequestFailed{Reason: err.Error()}))
		require.NoError(c.tb, fresh.Commit(ctx))
		c.turn = fresh.Turn()
		return cause
	}
	n := 0
	for _, e := range tx.Committed() {
		if e.Type == events.TypeInferenceStarted {
			n++
		}
	}
	require.NoError(c.tb, tx.Emit(replay.ActorWorker, events.RequestCompleted{Inferences: n}))
	require.NoError(c.tb, tx.Commit(ctx))
	c.turn = tx.Turn()
	return cause
}

// operator records payloads as one step of its own, as the operator
// package does (outside any request's Tx, whose lock checks are a
// middleware's). It returns the position of the first event.
func (c *convo) operator(actor string, ps ...events.Payload) int {
	c.tb.Helper()
	cause := "op-" + ulid.Make().String()
	first := c.turn.Events + 1
	evs := make([]events.Event, len(ps))
	for i, p := range ps {
		evs[i] = events.New(c.turn.Conversation, cause, 0, actor, p)
		require.NoError(c.tb, projector.Apply(c.turn, evs[i]))
	}
	seq, err := c.log.Append(context.Background(), c.turn.Conversation, c.turn.Seq, evs...)
	require.NoError(c.tb, err)
	c.turn.Seq = seq
	return first
}

// defaultLoop is the built-in default profile's loop: the scripted engine,
// its demo tool and the default middlewares.
func defaultLoop(tb testing.TB) (profile.Profile, engine.Loop) {
	tb.Helper()
	set, err := profile.Load("")
	require.NoError(tb, err)
	p := set[profile.DefaultName]
	b, err := p.Build(slog.New(slog.DiscardHandler), nil)
	require.NoError(tb, err)
	return p, b.Loop
}

// copyConversation appends every message of from to a new conversation to,
// message by message, passing each event through alter first (which may
// change it). It is how tests make a tampered copy of a real log.
func copyConversation(tb testing.TB, l *eventlog.Log, from, to string, alter func(r *eventlog.Record)) {
	tb.Helper()
	ctx := context.Background()
	var seq, cur uint64
	var msg []events.Event
	flush := func() {
		if len(msg) == 0 {
			return
		}
		var err error
		seq, err = l.Append(ctx, to, seq, msg...)
		require.NoError(tb, err)
		msg = nil
	}
	for r, err := range l.Events(ctx, from) {
		require.NoError(tb, err)
		if r.Seq != cur {
			flush()
			cur = r.Seq
		}
		r.Conversation = to
		r.Cause = to + "-" + r.Cause // causes are unique across conversations
		alter(&r)
		msg = append(msg, r.Event)
	}
	flush()
}
