package webconsole_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// TestE2EDeadLetteredRequestShowsInTheChat: a request into an app's
// conversation, published by another NATS client past the API's refusal,
// is kept by the worker as a dead letter and never answered. The chat page
// said nothing of it; it now notes it in the transcript as the worker
// gives up on it, with the reason and where it is listed.
func TestE2EDeadLetteredRequestShowsInTheChat(t *testing.T) {
	c := startConsole(t)
	const conv, requestID = "e2e-app", "01JCCCCCCCCCCCCCCCCCCCCCCC"
	ctx := context.Background()
	_, err := c.log.Append(ctx, conv, 0,
		events.New(conv, "call-1", 0, calls.Actor, events.ConversationStarted{}),
		events.New(conv, "call-1", 0, calls.Actor, events.UserAppended{BlockID: "u1", Text: "from the app"}))
	require.NoError(t, err)
	c.seedToken()

	c.open("/ui/chat/" + conv)
	c.waitFor("the stream", `document.getElementById("stream-state").dataset.state === "ready"`)
	_, err = c.log.JetStream().Publish(ctx, c.log.Names().ChatSubject(conv), []byte(`{"text":"typed on the wire","request_id":"`+requestID+`"}`))
	require.NoError(t, err)
	notice := fmt.Sprintf(`document.querySelector('#transcript .notice.dead-letter[data-request="%s"]')`, requestID)
	c.waitFor("the notice", notice+` !== null`)
	text := eval[string](c, notice+`.textContent`)
	assert.Contains(t, text, "was not answered")
	assert.Contains(t, text, "the conversation is an app's", "the worker's reason")
	assert.Contains(t, text, "turnlog status --dead", "where it is listed")
	c.checkClean()
}
