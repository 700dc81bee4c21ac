package webconsole_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2ECallsView: a conversation's model calls as a list; a call opens
// the request it sent, its output and what changed since the previous
// call; calls appear as they are made.
func TestE2ECallsView(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-calls"
	c.ask(conv, "hello")                            // call 1
	c.ask(conv, "count the words in one two three") // calls 2 and 3
	c.seedToken()
	c.open("/ui/conversations/" + conv)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	c.follow(chromedp.Click(chromedp.CSS(`a[href="/ui/conversations/` + conv + `/calls"]`)))
	c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
	c.waitFor("the live stream", `document.getElementById("live-state").textContent === "live"`)
	assert.Equal(t, []string{"1", "2", "3"}, eval[[]string](c, `[...document.querySelectorAll("#calls tbody tr")].map(r => r.dataset.call)`))
	assert.Equal(t, []string{"finished", "finished", "finished"}, eval[[]string](c, `[...document.querySelectorAll("#calls tbody tr")].map(r => r.dataset.status)`))
	assert.Equal(t, "3 model calls.", eval[string](c, `document.getElementById("calls-status").textContent`))

	// Call 2: what changed since call 1.
	c.do(chromedp.Click(chromedp.CSS(`#calls tr[data-call="2"]`)))
	c.waitFor("the call", `document.getElementById("call-view").dataset.ready === "true"`)
	assert.Equal(t, []string{"added", "added", "added"}, eval[[]string](c, `[...document.querySelectorAll("#call-diff li.change .op")].map(e => e.textContent)`))
	assert.Equal(t, []string{"reasoning", "tool_call"}, eval[[]string](c, `[...document.querySelectorAll("#call-output .block .kind")].map(e => e.textContent)`))
	// The request it sent, rendered again from the log and matching the
	// recorded hash; the reasoning it carried back shown as opaque.
	assert.Equal(t, "matches the record", eval[string](c, `document.querySelector("#call-wire .badge.verified").textContent`))
	wire := eval[string](c, `document.querySelector("#call-wire pre.json").textContent`)
	assert.Contains(t, wire, `"count the words in one two three"`)
	assert.Contains(t, wire, `"kind": "reasoning"`)
	assert.NotContains(t, wire, "Nothing to look up", "reasoning content is opaque")
	assert.Contains(t, eval[string](c, `document.querySelector("#call-wire .opaque").textContent`), "‹opaque text, 37 characters›")
	assert.Contains(t, eval[string](c, `document.querySelector("#call-wire pre.raw").textContent`), "Nothing to look up", "the exact bytes are there")
	c.screenshot("calls")

	// A call made while the page is open appears, live.
	c.ask(conv, "hello again")
	c.waitFor("the new call", `document.querySelectorAll("#calls tbody tr").length === 4`)
	c.waitFor("it finished", `document.querySelector('#calls tr[data-call="4"]').dataset.status === "finished"`)
	require.Equal(t, "4 model calls.", eval[string](c, `document.getElementById("calls-status").textContent`))
	c.checkClean()
}
