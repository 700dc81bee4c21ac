package webconsole_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2EForeignMessageShowsLive: a message another NATS client publishes
// on a followed conversation's subject appears at once, without a reload:
// as a "foreign" row of the timeline, and as a notice in the chat's
// transcript worded as the timeline words it. The stream's "foreign" event
// brings it; the pages used to learn nothing of it.
func TestE2EForeignMessageShowsLive(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-foreign"
	c.ask(conv, "hello")
	c.seedToken()
	publish := func() uint64 {
		t.Helper()
		ack, err := c.log.JetStream().Publish(context.Background(), c.log.Names().EventsSubject(conv), []byte("not a step"))
		require.NoError(t, err)
		return ack.Sequence
	}

	c.open("/ui/conversations/" + conv)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	c.waitFor("the stream", `document.getElementById("live-state").textContent === "live"`)
	seq := publish()
	c.waitFor("the foreign row", `document.querySelector('#timeline tr[data-type="foreign"]') !== null`)
	assert.Contains(t, eval[string](c, `document.querySelector('#timeline tr[data-type="foreign"]').textContent`), fmt.Sprintf("message %d: not written by turnlog", seq))
	assert.False(t, eval[bool](c, `document.querySelector('#timeline tr[data-type="foreign"] input.pick') !== null`),
		"not an event: no position to pick for a diff")
	when := eval[string](c, `document.querySelector('#timeline tr[data-type="foreign"] td.time').textContent`)
	assert.NotEmpty(t, when, "the row says when the stream stored the message")
	assert.NotContains(t, when, "1-01-01", "a real time, not the zero one")

	c.open("/ui/chat/" + conv)
	c.waitFor("the stream", `document.getElementById("stream-state").dataset.state === "ready"`)
	seq = publish()
	notice := fmt.Sprintf(`document.querySelector('#transcript .notice.foreign[data-seq="%d"]')`, seq)
	c.waitFor("the notice", notice+` !== null`)
	assert.Contains(t, eval[string](c, notice+`.textContent`), fmt.Sprintf("message %d: not written by turnlog", seq))
	c.checkClean()
}

// TestE2EQuarantinedMessageShowsInTheChat: a message with turnlog's
// headers that does not decode as a step (a damaged one) blocks the
// conversation: every request to it fails until `turnlog repair` removes
// it. The chat page said nothing of it until the next request failed; it
// now notes it in the transcript as it arrives, with the command that
// repairs it.
func TestE2EQuarantinedMessageShowsInTheChat(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-quarantined"
	c.ask(conv, "hello")
	c.seedToken()

	c.open("/ui/chat/" + conv)
	c.waitFor("the stream", `document.getElementById("stream-state").dataset.state === "ready"`)
	ack, err := c.log.JetStream().Publish(context.Background(), c.log.Names().EventsSubject(conv), []byte("garbage"),
		jetstream.WithMsgID("damaged:"+conv))
	require.NoError(t, err)
	notice := fmt.Sprintf(`document.querySelector('#transcript .notice.quarantined[data-seq="%d"]')`, ack.Sequence)
	c.waitFor("the notice", notice+` !== null`)
	text := eval[string](c, notice+`.textContent`)
	assert.Contains(t, text, fmt.Sprintf("quarantined message %d (7 bytes)", ack.Sequence))
	assert.Contains(t, text, "turnlog repair --yes "+conv)
	c.checkClean()
}
