package cli

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/worker"
)

// failingRequest sends a request and returns the reason it failed with.
func failingRequest(t *testing.T, e *auditEnv, conv, text string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	after, err := e.log.LastSeq(ctx, conv)
	require.NoError(t, err)
	req, err := worker.Send(ctx, e.log, worker.Request{Conversation: conv, Text: text})
	require.NoError(t, err)
	res, err := worker.Await(ctx, e.log, conv, req.RequestID, after, 0)
	require.ErrorIs(t, err, worker.ErrFailed)
	return res.Failed
}

// TestRepairMakesACorruptConversationWorkAgain is the user's path: garbage
// on a conversation's subject fails its requests, naming the message;
// `turnlog repair` shows what it would remove and changes nothing; with
// --yes it removes it with an audit event, and the conversation answers,
// exports and replays again.
func TestRepairMakesACorruptConversationWorkAgain(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, true)
	e.ask("spoiled", "hello")
	ack, err := e.log.JetStream().Publish(ctx, e.log.Names().EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged:"+ulid.Make().String()))
	require.NoError(t, err)
	seq := fmt.Sprint(ack.Sequence)
	assert.Contains(t, failingRequest(t, e, "spoiled", "are you there?"), "message "+seq)
	_, errOut, code := e.run("", "export", "spoiled")
	assert.NotEqual(t, 0, code, "export cannot pass over it")
	assert.Contains(t, errOut, "message "+seq)

	out, errOut, code := e.run("", "repair", "spoiled")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "remove message "+seq+" (7 bytes, sha256 ")
	assert.Contains(t, out, "nothing changed; run `turnlog repair --yes spoiled`")
	_, err = e.log.Load(ctx, "spoiled")
	require.ErrorIs(t, err, eventlog.ErrCorruptMessage, "a plan changes nothing")

	out, errOut, code = e.run("", "repair", "spoiled", "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "repaired spoiled: removed 1 message and 0 reasoning blocks")

	e.ask("spoiled", "and now?")
	_, errOut, code = e.run("", "export", "spoiled")
	assert.Equal(t, 0, code, errOut)
	out, errOut, code = e.run("", "replay", "spoiled")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "message.removed")
	assert.Contains(t, out, "removed message "+seq+" (7 bytes")
	assert.NotContains(t, out, "quarantined")
	out, _, _ = e.run("", "repair", "spoiled")
	assert.Contains(t, out, "nothing to repair")
}

// TestRepairRemovesAnOrphanedReasoningBlock: an old orphaned reasoning
// block fails every request under the default profile; `turnlog repair
// --yes` removes it with a recorded blocks.removed and requests work.
func TestRepairRemovesAnOrphanedReasoningBlock(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, true)
	_, err := e.log.Append(ctx, "old", 0, events.New("old", "seed", 0, "import", events.ReasoningAppended{BlockID: "r1", Text: "thinking"}))
	require.NoError(t, err)
	assert.Contains(t, failingRequest(t, e, "old", "hello?"), "turnlog repair --yes old")

	out, errOut, code := e.run("", "repair", "old")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, `remove reasoning block "r1" at index 0, followed by a user block`)
	out, errOut, code = e.run("", "repair", "old", "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "removed 0 messages and 1 reasoning block")
	e.ask("old", "hello again")

	var removed []eventlog.Record
	for rec, err := range e.log.Events(ctx, "old") {
		require.NoError(t, err)
		if rec.Type == events.TypeBlocksRemoved {
			removed = append(removed, rec)
		}
	}
	require.Len(t, removed, 1)
	assert.Equal(t, "repair", removed[0].Actor)
	assert.Contains(t, removed[0].Payload.(events.BlocksRemoved).Reason, "removed by turnlog repair")
}

func TestRepairRefusals(t *testing.T) {
	e := newAuditEnv(t, false)
	_, errOut, code := e.run("", "repair", "nobody")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "has no events")
	_, errOut, code = e.run("", "repair", "a.b")
	assert.Equal(t, 2, code)
	assert.Contains(t, errOut, "'.'")
}

// TestLsShowsQuarantinedMessages: a conversation whose last message is
// garbage is still listed, with the count of quarantined messages.
func TestLsShowsQuarantinedMessages(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, false)
	appendStep(t, e, "spoiled", events.UserAppended{BlockID: "u1", Text: "hi"})
	_, err := e.log.JetStream().Publish(ctx, e.log.Names().EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged:"+ulid.Make().String()))
	require.NoError(t, err)
	out, errOut, code := e.run("", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "spoiled")
	assert.Contains(t, out, "1 quarantined message (turnlog repair spoiled)")
}

// TestForeignMessagesBlockNoCommand: what the server stored on a
// conversation's subject for a client that named it as a reply subject
// (a JetStream answer, without headers) blocks no command: chat, export,
// replay and --verify go on, replay and ls name it as foreign, and repair
// removes it.
func TestForeignMessagesBlockNoCommand(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, true)
	e.ask("victim", "hello")
	ack, err := e.log.JetStream().Publish(ctx, e.log.Names().EventsRoleSubject("victim", "admin"),
		[]byte(`{"type":"io.nats.jetstream.api.v1.stream_info_response"}`))
	require.NoError(t, err)
	seq := fmt.Sprint(ack.Sequence)
	e.ask("victim", "still there?")

	for _, args := range [][]string{{"export", "victim"}, {"replay", "--verify", "victim"}, {"diff-turns", "victim@1", "victim"}} {
		_, errOut, code := e.run("", args...)
		assert.Contains(t, []int{0, 1}, code, "%v: %s", args, errOut)
		assert.NotContains(t, errOut, "quarantined", "%v", args)
	}
	out, errOut, code := e.run("", "replay", "victim")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "message "+seq+": not written by turnlog (a NATS reply or another client's publish), ignored")
	assert.Contains(t, out, "1 foreign message (not written by turnlog) ignored")
	out, errOut, code = e.run("", "ls")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "1 foreign message (not written by turnlog) ignored")

	out, errOut, code = e.run("", "repair", "victim", "--yes")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "removed 1 message")
	out, _, _ = e.run("", "replay", "victim")
	assert.NotContains(t, out, "foreign")
}
