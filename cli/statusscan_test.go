package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusScanFindsForeignAndQuarantinedMessages: after another NATS
// client published on conversations' subjects, `turnlog status` says
// that it does not count such messages and how to; `status --scan` reads
// every stored message and names the conversations that hold them, how
// many of each kind, and the commands that show and remove them. Status
// used to say nothing of them.
func TestStatusScanFindsForeignAndQuarantinedMessages(t *testing.T) {
	ctx := context.Background()
	e := newAuditEnv(t, true)
	e.ask("clean", "hello")
	e.ask("visited", "hello")
	js, names := e.log.JetStream(), e.log.Names()
	for range 2 {
		_, err := js.Publish(ctx, names.EventsSubject("visited"), []byte("a reply without turnlog's headers"))
		require.NoError(t, err)
	}
	_, err := js.Publish(ctx, names.EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged-1"))
	require.NoError(t, err)

	out, errOut, code := e.run("", "status")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "foreign and quarantined messages: not counted (turnlog status --scan reads every stored message to count them)")

	out, errOut, code = e.run("", "status", "--scan")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "foreign messages: 2, quarantined messages: 1, in 2 of 3 conversations")
	assert.Regexp(t, `visited +2 +0 +turnlog replay visited`, out)
	assert.Regexp(t, `spoiled +0 +1 +turnlog replay spoiled`, out)
	assert.NotRegexp(t, `(?m)^clean `, out)
	assert.Contains(t, out, "turnlog repair --yes <conversation> removes them")

	out, errOut, code = e.run("", "status", "--scan", "--json")
	require.Equal(t, 0, code, errOut)
	var st struct {
		NotSteps *struct {
			Scanned       bool `json:"scanned"`
			Conversations int  `json:"conversations"`
			Foreign       int  `json:"foreign"`
			Quarantined   int  `json:"quarantined"`
			In            []struct {
				Conversation string `json:"conversation"`
				Foreign      int    `json:"foreign"`
				Quarantined  int    `json:"quarantined"`
			} `json:"in"`
		} `json:"not_steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.NotNil(t, st.NotSteps)
	assert.True(t, st.NotSteps.Scanned)
	assert.Equal(t, 3, st.NotSteps.Conversations)
	assert.Equal(t, 2, st.NotSteps.Foreign)
	assert.Equal(t, 1, st.NotSteps.Quarantined)
	require.Len(t, st.NotSteps.In, 2)
	assert.Equal(t, "spoiled", st.NotSteps.In[0].Conversation, "sorted by ID")
	assert.Equal(t, "visited", st.NotSteps.In[1].Conversation)

	out, errOut, code = e.run("", "status", "--json")
	require.Equal(t, 0, code, errOut)
	st.NotSteps = nil
	require.NoError(t, json.Unmarshal([]byte(out), &st))
	require.NotNil(t, st.NotSteps)
	assert.False(t, st.NotSteps.Scanned, "not counted without --scan")

	// A subject that names no valid conversation: turnlog never writes
	// there, so all of it is foreign, and no turnlog command reads it.
	_, err = js.Publish(ctx, names.EventsSubject("x:y"), []byte("odd"))
	require.NoError(t, err)
	out, errOut, code = e.run("", "status", "--scan")
	require.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "foreign messages: 3, quarantined messages: 1, in 3 of 4 conversations")
	assert.Regexp(t, `"x:y" +1 +0 +no turnlog command: the subject names no valid conversation`, out)
}
