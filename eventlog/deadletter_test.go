package eventlog_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestDeadLettersSurviveRestartsAndAreBounded: dead letters are counted
// and listed newest last, kept across a server restart, stored once per
// request however often it is declared dead, and bounded: past the limit
// the oldest go.
func TestDeadLettersSurviveRestartsAndAreBounded(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	limits := eventlog.DeadLetterLimits{MaxAge: time.Hour, MaxMsgs: 5, MaxBytes: 1 << 20}
	l := openLog(t, srv, eventlog.WithDeadLetterLimits(limits))

	n, err := l.DeadLetterCount(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
	got, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	assert.Empty(t, got)

	for i := 1; i <= 7; i++ {
		require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: "turnlog.chat.*", Reason: fmt.Sprint("reason ", i),
			RequestSeq: uint64(i), Data: []byte(`{"text":"hi"}`)}))
	}
	// Declared dead again (a worker crashed before terminating it).
	require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: "turnlog.chat.*", Reason: "reason 7", RequestSeq: 7}))

	srv.Stop()
	srv2 := natstest.StartIn(t, srv.Dir)
	l2 := openLog(t, srv2, eventlog.WithDeadLetterLimits(limits))
	n, err = l2.DeadLetterCount(ctx)
	require.NoError(t, err)
	assert.Equal(t, uint64(5), n, "bounded to the limit; request 7 stored once")
	got, err = l2.DeadLetters(ctx, 3)
	require.NoError(t, err)
	require.Len(t, got, 3)
	assert.Equal(t, []string{"reason 5", "reason 6", "reason 7"}, []string{got[0].Reason, got[1].Reason, got[2].Reason})
	assert.Equal(t, "turnlog.chat.*", got[2].Subject)
	assert.Equal(t, `{"text":"hi"}`, string(got[2].Data))
	assert.False(t, got[2].Time.IsZero())
	all, err := l2.DeadLetters(ctx, 100)
	require.NoError(t, err)
	assert.Len(t, all, 5)
	assert.Equal(t, "reason 3", all[0].Reason, "the oldest went first")
}

// TestReadOnlyOpenOfAnInstallationWithoutDeadLetters: a read-only client
// of an installation from before dead letters opens it all the same; the
// dead letters are looked up when asked for, once a worker made them.
func TestReadOnlyOpenOfAnInstallationWithoutDeadLetters(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	require.NoError(t, l.JetStream().DeleteStream(ctx, l.Names().DeadLettersStream))
	require.NoError(t, l.JetStream().DeleteKeyValue(ctx, l.Names().RequestIDsBucket))

	ro := openLog(t, srv, eventlog.ReadOnly())
	_, err := ro.DeadLetterCount(ctx)
	require.Error(t, err, "not there yet")
	openLog(t, srv) // a worker or an admin starts
	n, err := ro.DeadLetterCount(ctx)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// TestDeadLetterListShowsWhatTurnlogDidNotWrite: a message on the
// dead-letter subject that turnlog did not write (the JSON answer of a
// JetStream API request a client aimed there as its reply subject, or
// any client's publish) was listed as a dead letter of no request, no
// reason and no time. It is listed as what it is.
func TestDeadLetterListShowsWhatTurnlogDidNotWrite(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: "turnlog.chat.*", Reason: "no conversation", RequestSeq: 1}))
	reply := `{"type":"io.nats.jetstream.api.v1.stream_info_response","config":{"name":"KV_TURNLOG_TEMPLATES"}}`
	_, err := l.JetStream().Publish(ctx, l.Names().DeadLetterSubject(), []byte(reply))
	require.NoError(t, err)
	got, err := l.DeadLetters(ctx, 10)
	require.NoError(t, err)
	require.Len(t, got, 2)
	assert.Equal(t, "no conversation", got[0].Reason)
	assert.Contains(t, got[1].Reason, "not a dead-letter record")
	assert.Equal(t, reply, string(got[1].Data), "its bytes, to look into")
	assert.False(t, got[1].Time.IsZero(), "when it was stored")
}

// TestDeadLetterListEndsOnACopiedRecord: a direct get's copy of a dead
// letter, stored on the dead-letter subject (a client's request naming it
// as the reply subject), holds the copied record's sequence in its
// headers, which the batched read took for the copy's own: the listing
// asked for the same messages again for ever (found by the security
// re-probe: `turnlog status --dead` spun until killed). It ends, and
// lists the copy as what it is.
func TestDeadLetterListEndsOnACopiedRecord(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	require.NoError(t, l.AddDeadLetter(ctx, eventlog.DeadLetter{Subject: "turnlog.chat.*", Reason: "no conversation"}))
	// The direct get's answer goes to the dead-letter subject, and is
	// stored there: wait until it is.
	require.NoError(t, srv.Conn.PublishRequest("$JS.API.DIRECT.GET."+l.Names().DeadLettersStream, l.Names().DeadLetterSubject(), []byte(`{"seq":1}`)))
	require.Eventually(t, func() bool {
		n, err := l.DeadLetterCount(ctx)
		return err == nil && n == 2
	}, 10*time.Second, 10*time.Millisecond)
	lctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	got, err := l.DeadLetters(lctx, 10)
	require.NoError(t, err, "the listing ends")
	require.Len(t, got, 2)
	assert.Equal(t, "no conversation", got[0].Reason)
	assert.Contains(t, got[1].Reason, "not written by turnlog")
	assert.Equal(t, uint64(2), got[1].Seq, "the copy's own sequence")
}
