package gateway_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/repair"
)

// TestAQuarantinedConversationIsNotForwarded: a conversation whose log
// holds a damaged step cannot be folded, so no call of it can be
// recorded. Each call naming it was forwarded all the same (the provider
// did the work, and billed it), and then cut before its end: the app got
// no answer and no reason, and an SDK retried it, forwarded again. Now the
// first call that finds the damage, once the upstream answers, gets the
// reason (422, which SDKs do not retry), and the calls after it are
// refused before anything is forwarded, until the conversation is
// repaired.
func TestAQuarantinedConversationIsNotForwarded(t *testing.T) {
	up := newChatUpstream(t, "")
	r := newRig(t, up.URL, "")
	h := map[string]string{"Turnlog-Token": token, "Turnlog-Conversation": "spoiled"}
	resp, body := post(t, r.gw.URL+"/v1/chat/completions", h, fmt.Sprintf(chatBody, "one"))
	require.Equal(t, 200, resp.StatusCode, "%s", body)
	ctx := context.Background()
	_, err := r.log.JetStream().Publish(ctx, r.log.Names().EventsSubject("spoiled"), []byte("garbage"), jetstream.WithMsgID("damaged:1"))
	require.NoError(t, err)

	forwarded := func() int { sent, _, _ := r.wire.snapshot(); return len(sent) }
	call := func(text string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, r.gw.URL+"/v1/chat/completions", strings.NewReader(fmt.Sprintf(chatBody, text)))
		require.NoError(t, err)
		for k, v := range h {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err, "the app gets an answer, not a cut connection")
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err, "the app gets an answer, not a cut body")
		return resp.StatusCode, string(b)
	}
	status, body2 := call("two")
	assert.Equal(t, http.StatusUnprocessableEntity, status, body2)
	assert.Contains(t, body2, "turnlog repair --yes spoiled")
	assert.Contains(t, body2, `"error"`, "in the API's error shape")
	before := forwarded()
	for range 2 {
		status, body2 = call("three")
		assert.Equal(t, http.StatusUnprocessableEntity, status, body2)
		assert.Contains(t, body2, "nothing was forwarded")
		assert.Contains(t, body2, "turnlog repair --yes spoiled")
	}
	assert.Equal(t, before, forwarded(), "a call of a conversation known to be damaged is not forwarded")

	plan, err := repair.Inspect(ctx, r.log, "spoiled")
	require.NoError(t, err)
	_, err = repair.Apply(ctx, r.log, plan)
	require.NoError(t, err)
	status, body2 = call("four")
	assert.Equal(t, 200, status, "once repaired, its calls are recorded again: %s", body2)
	assert.Equal(t, before+1, forwarded())
}
