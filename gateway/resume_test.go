package gateway_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// The file an import stops in: a chat's first call, answered with a tool
// call, then its continuation (the duplicate system prompt in it is a
// finding its record must keep).
var interruptedFile = strings.Join([]string{
	`{"api":"chat.completions","time":"2025-03-01T10:00:00Z","request":{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"weather?"}]},` +
		`"response":{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{}"}}]},"finish_reason":"tool_calls"}]}}`,
	`{"api":"chat.completions","time":"2025-03-01T10:01:00Z","request":{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":"weather?"},{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_1","content":"sunny"},{"role":"system","content":"s"}]},` +
		`"response":{"id":"c2","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Sunny."},"finish_reason":"stop"}]}}`,
}, "\n")

// failingNotes is a threading store that refuses the note that an
// imported call was recorded, while armed: the import stops after the
// call is stored, before it is noted.
type failingNotes struct {
	calls.ThreadStore
	armed atomic.Bool
}

func (f *failingNotes) Put(ctx context.Context, pairs map[string]string) error {
	for k, v := range pairs {
		if strings.HasPrefix(k, "i.") && !strings.HasPrefix(v, "pending ") && f.armed.Load() {
			return errors.New("the process stopped here")
		}
	}
	return f.ThreadStore.Put(ctx, pairs)
}

// failingOutcomes is an event log that refuses a call's outcome (step 1)
// while armed: the import stops after the call's input is stored.
type failingOutcomes struct {
	*eventlog.Log
	armed atomic.Bool
}

func (f *failingOutcomes) Append(ctx context.Context, conv string, seq uint64, evs ...events.Event) (uint64, error) {
	if len(evs) > 0 && evs[0].Step == 1 && f.armed.Load() {
		return 0, errors.New("the process stopped here")
	}
	return f.Log.Append(ctx, conv, seq, evs...)
}

// importAfterAStop imports the file with stop armed, which stops the
// import at its second call, then again with it disarmed, as a user
// re-runs `turnlog import --calls` after a crash, and returns the log and
// what the second import said.
func importAfterAStop(t *testing.T, stop func(l *eventlog.Log, notes *failingNotes) (gateway.Log, *atomic.Bool)) (*eventlog.Log, []gateway.Imported) {
	t.Helper()
	ctx := context.Background()
	s := natstest.Start(t)
	l, err := eventlog.Open(ctx, s.Conn)
	require.NoError(t, err)
	threads, err := l.Threads(ctx)
	require.NoError(t, err)
	notes := &failingNotes{ThreadStore: threads}
	log, armed := stop(l, notes)
	rec, err := gateway.NewRecorder(gateway.Config{Log: log, Connected: s.Conn.IsConnected, Token: token, Threads: notes})
	require.NoError(t, err)
	lines, err := gateway.ReadCalls(strings.NewReader(interruptedFile), 1<<20)
	require.NoError(t, err)

	first, err := rec.Import(ctx, lines[:1])
	require.NoError(t, err)
	require.Equal(t, gateway.StatusRecorded, first[0].Status)
	armed.Store(true)
	_, err = rec.Import(ctx, lines)
	require.ErrorContains(t, err, "the process stopped here")
	armed.Store(false)

	// A new process, as after a crash: nothing kept in memory.
	rec, err = gateway.NewRecorder(gateway.Config{Log: log, Connected: s.Conn.IsConnected, Token: token, Threads: threads})
	require.NoError(t, err)
	again, err := rec.Import(ctx, lines)
	require.NoError(t, err)
	require.Len(t, again, 2)
	assert.Equal(t, gateway.StatusUnchanged, again[0].Status)
	assert.Equal(t, first[0].Conversation, again[1].Conversation, "the continuation stays in the chat")
	return l, again
}

// oneRecordOfEachCall: the chat holds each call once, whole, with the
// second call's findings (replay --check's, recorded once), and replay
// --verify proves both.
func oneRecordOfEachCall(t *testing.T, l *eventlog.Log, conv string) {
	t.Helper()
	started, finished := 0, 0
	var rules []string
	for _, e := range conversationEvents(t, l, conv) {
		switch p := e.Payload.(type) {
		case events.InferenceStarted:
			started++
		case events.InferenceFinished:
			finished++
		case events.FindingRecorded:
			rules = append(rules, p.Rule)
		}
	}
	assert.Equal(t, 2, started, "each call recorded once")
	assert.Equal(t, 2, finished, "each call whole")
	checked, err := replay.Check(t.Context(), l, conv)
	require.NoError(t, err)
	var want []string
	for _, f := range checked.Findings {
		assert.Equal(t, 2, f.Call)
		want = append(want, string(f.Rule))
	}
	assert.Contains(t, want, "duplicate_system_prompt")
	assert.Equal(t, want, rules, "the findings replay --check finds, recorded once")
	verify(t, l, conv)
}

// An import that stopped after storing a call, before noting it, does not
// record it again when it is run again (it did before ImportPending: the
// second run stored the call a second time).
func TestImportStoppedBeforeItsNoteRecordsNothingTwice(t *testing.T) {
	l, again := importAfterAStop(t, func(l *eventlog.Log, notes *failingNotes) (gateway.Log, *atomic.Bool) {
		return l, &notes.armed
	})
	assert.Equal(t, gateway.StatusUnchanged, again[1].Status, "the call the first run stored")
	oneRecordOfEachCall(t, l, again[1].Conversation)
}

// An import that stopped after storing a call's input, before its
// outcome, stores the outcome when it is run again, and nothing twice.
func TestImportStoppedBeforeAnOutcomeFinishesTheCall(t *testing.T) {
	l, again := importAfterAStop(t, func(l *eventlog.Log, _ *failingNotes) (gateway.Log, *atomic.Bool) {
		f := &failingOutcomes{Log: l}
		return f, &f.armed
	})
	assert.Equal(t, gateway.StatusRecorded, again[1].Status, "its outcome, stored now")
	oneRecordOfEachCall(t, l, again[1].Conversation)
}
