package eventlog_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
)

// TestBackgroundResponsesList: the gateways' list of background
// responses keeps what a gateway put (include list, account headers,
// since, instance), drops an entry on Delete and a conversation's
// entries on Erase, and reads on past what another NATS client wrote into
// the bucket, saying what it is, without dropping it.
func TestBackgroundResponsesList(t *testing.T) {
	s := natstest.Start(t)
	l, err := eventlog.Open(t.Context(), s.Conn)
	require.NoError(t, err)
	kept, err := l.BackgroundResponses(t.Context())
	require.NoError(t, err)
	since := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	first := eventlog.BackgroundResponse{Conversation: "conv-a", ResponseID: "resp_1", Include: []string{"reasoning.encrypted_content"},
		Account: map[string][]string{"Openai-Project": {"proj_x"}}, Since: since, Instance: "01M8K4S9HGRN5STQA9P6YNGPCH"}
	require.NoError(t, kept.Put(t.Context(), first))
	require.NoError(t, kept.Put(t.Context(), eventlog.BackgroundResponse{Conversation: "conv-a", ResponseID: "resp_2", Since: since}))
	require.NoError(t, kept.Put(t.Context(), eventlog.BackgroundResponse{Conversation: "conv-b", ResponseID: "resp_3", Since: since}))
	// Another client's writes: not JSON, and an entry under a key that
	// is not its own.
	require.NoError(t, s.Conn.Publish("$KV.TURNLOG_BACKGROUND.junk", []byte("\x00not json")))
	require.NoError(t, s.Conn.Publish("$KV.TURNLOG_BACKGROUND.other", []byte(`{"conversation":"conv-b","response_id":"resp_9"}`)))
	require.NoError(t, s.Conn.Flush())

	read := func() (ok map[string]eventlog.BackgroundResponse, bad []string) {
		ok = map[string]eventlog.BackgroundResponse{}
		require.NoError(t, kept.Each(t.Context(), func(r eventlog.BackgroundResponse, err error) bool {
			if err != nil {
				bad = append(bad, err.Error())
				return true
			}
			ok[r.ResponseID] = r
			return true
		}))
		return ok, bad
	}
	require.Eventually(t, func() bool { _, bad := read(); return len(bad) == 2 }, 5*time.Second, 10*time.Millisecond)
	ok, bad := read()
	require.Len(t, ok, 3)
	assert.Equal(t, first, ok["resp_1"])
	assert.Contains(t, bad[0]+bad[1], "background response entry junk: invalid character")
	assert.Contains(t, bad[0]+bad[1], "background response entry other: not an entry a gateway wrote")

	require.NoError(t, kept.Delete(t.Context(), "conv-a", "resp_2"))
	require.NoError(t, kept.Put(t.Context(), eventlog.BackgroundResponse{Conversation: "conv-a", ResponseID: "resp_1", Since: since, Instance: "01M8K4S9HGRN5STQA9P6YNGPCJ"}))
	ok, _ = read()
	require.Len(t, ok, 2, "deleted: gone")
	assert.Equal(t, "01M8K4S9HGRN5STQA9P6YNGPCJ", ok["resp_1"].Instance, "put again: the latest value")

	// Erase: the conversation's entries go with it (the conversation
	// need hold no events for that).
	_, err = l.Append(t.Context(), "conv-a", 0, events.New("conv-a", "c1", 0, "test", events.UserAppended{BlockID: "b1", Text: "hi"}))
	require.NoError(t, err)
	erased, err := l.Erase(t.Context(), "conv-a")
	require.NoError(t, err)
	assert.Equal(t, 1, erased.Background)
	ok, bad = read()
	assert.Equal(t, []string{"resp_3"}, keys(ok))
	assert.Len(t, bad, 2, "what another client wrote is not erase's to drop")
}

func keys(m map[string]eventlog.BackgroundResponse) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
