package gateway_test

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// TestForksFindsAGatewayBranch: a call that branches a conversation (a
// Responses call continuing an earlier response than the latest) makes a
// fork, which eventlog's Forks finds from the conversation, so that
// erasing the conversation with its forks leaves no copy of its blocks.
func TestForksFindsAGatewayBranch(t *testing.T) {
	ctx := t.Context()
	r := newRig(t, newNumberedResponses(t).URL, "")
	call := func(input, previous string) (conv, id string) {
		t.Helper()
		return respond(t, r, nil, input, previous)
	}
	main, r1 := call("my address is 1 Main St", "")
	call("and my phone is 555-0100", r1)
	branch, _ := call("my phone is 555-0199 instead", r1)
	require.NotEqual(t, main, branch, "an earlier call's response branches")
	other, _ := call("nothing private here", "")
	require.NotContains(t, []string{main, branch}, other)

	found, err := r.log.Forks(ctx, main)
	require.NoError(t, err)
	require.Len(t, found.Forks, 1)
	assert.Equal(t, branch, found.Forks[0].Conversation)
	assert.Equal(t, main, found.Forks[0].From)
	first := conversationEvents(t, r.log, branch)[0].Payload.(events.ConversationStarted)
	assert.Equal(t, first.ForkedAt, found.Forks[0].At)
	assert.Empty(t, found.Unchecked)

	for _, f := range slices.Backward(found.Forks) {
		_, err := r.log.Erase(ctx, f.Conversation)
		require.NoError(t, err)
	}
	_, err = r.log.Erase(ctx, main)
	require.NoError(t, err)
	stored := string(storedBytes(t, r))
	for _, text := range []string{"1 Main St", "555-0100", "555-0199"} {
		assert.NotContains(t, stored, text)
	}
	assert.Contains(t, stored, "nothing private here")
}
