// Package storagetest fills a test server's JetStream storage with the
// events of one conversation, and frees it again, for the tests of what
// turnlog does when the storage is full (issue 24): the log, the worker,
// the HTTP API and the commands each have some.
package storagetest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// Filler is the conversation whose events fill the storage.
const Filler = "filler"

// StepBytes is the size of the text of each step Fill appends.
const StepBytes = 60 << 10

// Fill appends steps of StepBytes to Filler until the storage refuses
// one, and returns how many it stored and the refusal, which must be
// eventlog.ErrStorageFull. A storage that takes 10,000 steps never filled
// and fails the test.
func Fill(t testing.TB, l *eventlog.Log) (stored int, refusal error) {
	t.Helper()
	text := strings.Repeat("f", StepBytes)
	var seq uint64
	for ; stored < 10_000; stored++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		s, err := l.Append(ctx, Filler, seq, events.New(Filler, fmt.Sprint("fill", stored), 0, "test",
			events.UserAppended{BlockID: fmt.Sprint("b", stored), Text: text}))
		cancel()
		if err != nil {
			require.ErrorIs(t, err, eventlog.ErrStorageFull)
			return stored, err
		}
		seq = s
	}
	t.Fatal("the storage never filled")
	return stored, nil
}

// Free purges Filler's events but the last keep, on every writer's
// subject (EventsFilter: steps are stored on their role's subject).
func Free(t testing.TB, l *eventlog.Log, keep uint64) {
	t.Helper()
	ctx := context.Background()
	s, err := l.JetStream().Stream(ctx, l.Names().EventsStream)
	require.NoError(t, err)
	opts := []jetstream.StreamPurgeOpt{jetstream.WithPurgeSubject(l.Names().EventsFilter(Filler))}
	if keep > 0 {
		opts = append(opts, jetstream.WithPurgeKeep(keep))
	}
	require.NoError(t, s.Purge(ctx, opts...), "free space")
}
