package webconsole_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/gateway"
)

// TestE2EUnreadGatewayCall: a gateway call whose request the gateway
// could not read has no input to verify; the timeline and the call's page
// say so ("request not read"), not that its input hash does not match the
// log (they did, in red).
func TestE2EUnreadGatewayCall(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-unread"
	rec, err := gateway.NewRecorder(gateway.Config{Log: c.log})
	require.NoError(t, err)
	p, err := rec.Begin(t.Context(), gateway.Call{API: calls.ChatCompletions, Body: []byte(`model=m&messages=hi`), Conversation: conv})
	require.NoError(t, err)
	require.NoError(t, rec.Finish(t.Context(), p, calls.Outcome{Failure: "the upstream answered 400"}))

	c.seedToken()
	c.open("/ui/conversations/" + conv)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	assert.Equal(t, "request not read: only its bytes' hash", eval[string](c, `document.querySelector("#timeline .badge.unparsed").textContent`))
	assert.Zero(t, eval[int](c, `document.querySelectorAll("#timeline .badge.unverified").length`), "not a mismatch")

	c.follow(chromedp.Click(chromedp.CSS(`a[href="/ui/conversations/` + conv + `/calls"]`)))
	c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
	c.do(chromedp.Click(chromedp.CSS(`#calls tr[data-call="1"]`)))
	c.waitFor("the call", `document.getElementById("call-view").dataset.ready === "true"`)
	assert.Equal(t, "request not read: only its bytes' hash", eval[string](c, `document.querySelector("#call-view .call-meta .badge.unparsed").textContent`))
	assert.Contains(t, eval[string](c, `document.querySelector("#call-view .call-meta .badge.unparsed").title`), "not a JSON object")
	c.checkClean()
}
