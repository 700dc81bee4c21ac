package eventlog_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/replay"
)

// forkIDs is the IDs of forks, in the order Forks gives them.
func forkIDs(fs []eventlog.Fork) []string {
	out := []string{}
	for _, f := range fs {
		out = append(out, f.Conversation)
	}
	return out
}

// uncheckedIDs is the IDs of the conversations Forks could not check.
func uncheckedIDs(us []eventlog.Unchecked) []string {
	out := []string{}
	for _, u := range us {
		out = append(out, u.Conversation)
	}
	return out
}

func TestForks(t *testing.T) {
	for _, shards := range []int{1, 3} {
		t.Run(map[int]string{1: "one events stream", 3: "three event shards"}[shards], func(t *testing.T) {
			ctx := context.Background()
			l := openLog(t, natstest.Start(t), eventlog.WithEventShards(shards))
			appendTo := func(conv string, evs ...events.Event) {
				t.Helper()
				seq, err := l.LastSeq(ctx, conv)
				require.NoError(t, err)
				_, err = l.Append(ctx, conv, seq, evs...)
				require.NoError(t, err)
			}
			fork := func(from, to string) {
				t.Helper()
				_, err := replay.Fork(ctx, l, from, 0, to)
				require.NoError(t, err)
			}
			started := func(conv, from string) events.Event {
				return events.New(conv, "r-"+conv, 0, "test", events.ConversationStarted{ForkedFrom: from, ForkedAt: 1})
			}
			// a, its forks f1 and f2, f1's fork f1a; u, unrelated, and its
			// fork uf; a conversation forked from itself; two forked from
			// each other.
			appendTo("a", user("a", "r1", 0, "my address is 1 Main St"))
			fork("a", "f1")
			appendTo("f1", user("f1", "r2", 0, "more of the fork"))
			fork("f1", "f1a")
			fork("a", "f2")
			appendTo("u", user("u", "r3", 0, "nothing private"))
			fork("u", "uf")
			appendTo("self", started("self", "self"))
			appendTo("p", started("p", "q"))
			appendTo("q", started("q", "p"))
			// x's first message is not turnlog's (a NATS reply stored on
			// its subject); y's is not a step (garbage with a message ID).
			_, err := l.JetStream().Publish(ctx, l.Names().EventsSubject("x"), []byte(`{"type":"io.nats.jetstream.api.v1.pub_ack"}`))
			require.NoError(t, err)
			_, err = l.JetStream().PublishMsg(ctx, &nats.Msg{Subject: l.Names().EventsSubject("y"), Data: []byte("not a step"),
				Header: nats.Header{jetstream.MsgIDHeader: []string{"y:0"}}})
			require.NoError(t, err)

			for _, tc := range []struct {
				name  string
				conv  string
				forks []eventlog.Fork
			}{
				{name: "forks and a fork of a fork, by depth", conv: "a", forks: []eventlog.Fork{
					{Conversation: "f1", From: "a", At: 1, Depth: 1},
					{Conversation: "f2", From: "a", At: 1, Depth: 1},
					{Conversation: "f1a", From: "f1", At: 2, Depth: 2},
				}},
				{name: "a fork's forks", conv: "f1", forks: []eventlog.Fork{{Conversation: "f1a", From: "f1", At: 2, Depth: 1}}},
				{name: "an unrelated conversation's", conv: "u", forks: []eventlog.Fork{{Conversation: "uf", From: "u", At: 1, Depth: 1}}},
				{name: "none", conv: "f2", forks: []eventlog.Fork{}},
				{name: "a conversation that names itself is not its own fork", conv: "self", forks: []eventlog.Fork{}},
				{name: "forks of each other end", conv: "p", forks: []eventlog.Fork{{Conversation: "q", From: "p", At: 1, Depth: 1}}},
				{name: "a conversation never stored", conv: "nobody", forks: []eventlog.Fork{}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					got, err := l.Forks(ctx, tc.conv)
					require.NoError(t, err)
					assert.Equal(t, tc.forks, append([]eventlog.Fork{}, got.Forks...))
					// Whether x and y are forks is unknown: they are
					// named, whichever conversation is searched.
					assert.Equal(t, []string{"x", "y"}, uncheckedIDs(got.Unchecked))
					for _, u := range got.Unchecked {
						assert.Error(t, u.Err)
					}
				})
			}
			t.Run("why a conversation could not be checked", func(t *testing.T) {
				got, err := l.Forks(ctx, "a")
				require.NoError(t, err)
				require.Len(t, got.Unchecked, 2)
				assert.ErrorIs(t, got.Unchecked[0].Err, eventlog.ErrForeignMessage)
				assert.ErrorIs(t, got.Unchecked[1].Err, eventlog.ErrCorruptMessage)
			})
			t.Run("the conversation searched from is not unchecked", func(t *testing.T) {
				got, err := l.Forks(ctx, "x")
				require.NoError(t, err)
				assert.Empty(t, got.Forks)
				assert.Equal(t, []string{"y"}, uncheckedIDs(got.Unchecked))
			})
			t.Run("an erased conversation's forks are still found", func(t *testing.T) {
				_, err := l.Erase(ctx, "a")
				require.NoError(t, err)
				got, err := l.Forks(ctx, "a")
				require.NoError(t, err)
				assert.Equal(t, []string{"f1", "f2", "f1a"}, forkIDs(got.Forks))
			})
			t.Run("an invalid ID", func(t *testing.T) {
				_, err := l.Forks(ctx, "a.>")
				assert.ErrorIs(t, err, events.ErrInvalidConversationID)
			})
		})
	}
}

// TestForksFailsWithoutTheStore: a search that cannot read the store says
// so; it does not answer "no forks".
func TestForksFailsWithoutTheStore(t *testing.T) {
	ctx := context.Background()
	srv := natstest.Start(t)
	l := openLog(t, srv)
	_, err := l.Append(ctx, "a", 0, user("a", "r1", 0, "hello"))
	require.NoError(t, err)
	srv.Conn.Close()
	_, err = l.Forks(ctx, "a")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "find forks of a")
}
