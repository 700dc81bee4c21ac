package webconsole_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/replay"
)

// TestE2ECallsPastTheFirstPage: a conversation of more model calls than
// the page loads at once (100). Its only finding, at call 110, is counted
// in the summary and can be jumped to, not hidden until "More calls" is
// clicked enough times; and a link to a call past the first page (an
// alert's, `turnlog ls`'s) opens that call, on the page of calls that
// holds it.
func TestE2ECallsPastTheFirstPage(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-call-pages"
	questions := make([]string, 120)
	for i := range questions {
		questions[i] = fmt.Sprintf("hello %d", i+1)
	}
	recordRequests(t, c, conv, questions, 110)
	checked, err := replay.Check(context.Background(), c.log, conv)
	require.NoError(t, err)
	require.Len(t, checked.Findings, 1, "%+v", checked.Findings)
	require.Equal(t, 110, checked.Findings[0].Call)
	require.Equal(t, "duplicate_system_prompt", string(checked.Findings[0].Rule))
	c.seedToken()

	rows := `[...document.querySelectorAll("#calls tbody tr")].map(r => Number(r.dataset.call))`
	between := func(from, to int) []int {
		out := []int{}
		for n := from; n <= to; n++ {
			out = append(out, n)
		}
		return out
	}
	status := `document.getElementById("calls-status").textContent`

	t.Run("the summary counts the findings of calls not loaded", func(t *testing.T) {
		c.open("/ui/conversations/" + conv + "/calls")
		c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
		assert.Equal(t, between(1, 100), eval[[]int](c, rows))
		assert.Equal(t, "120 model calls, calls 1–100 shown, 1 finding (1 in calls not shown yet).", eval[string](c, status))
		// The call that has it is named, and a click opens it.
		require.Equal(t, []string{"110"}, eval[[]string](c, `[...document.querySelectorAll("#calls-findings a.finding-call")].map(a => a.dataset.call)`))
		c.screenshot("calls-pages")
		c.do(chromedp.Click(chromedp.CSS(`#calls-findings a.finding-call[data-call="110"]`)))
		c.waitFor("call 110", `document.getElementById("call-view").dataset.call === "110" && document.getElementById("call-view").dataset.ready === "true"`)
		assert.Equal(t, []string{"duplicate_system_prompt"}, eval[[]string](c, `[...document.querySelectorAll("#call-view .call-findings li.finding")].map(e => e.dataset.rule)`))
		assert.Equal(t, []string{"110"}, eval[[]string](c, `[...document.querySelectorAll("#calls tbody tr.has-findings")].map(r => r.dataset.call)`))
		assert.Equal(t, between(1, 120), eval[[]int](c, rows), "the page that holds call 110 joins the calls loaded")
		assert.Equal(t, "120 model calls, 1 finding.", eval[string](c, status))
		assert.Equal(t, "?call=110", eval[string](c, `location.search`))
	})

	t.Run("a link to a call past the first page opens it", func(t *testing.T) {
		c.open("/ui/conversations/" + conv + "/calls?call=115")
		c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
		require.Equal(t, "115", eval[string](c, `document.getElementById("call-view").dataset.call ?? ""`), "the call the link names is open")
		c.waitFor("call 115", `document.getElementById("call-view").dataset.ready === "true"`)
		assert.Equal(t, "Model call #115", eval[string](c, `document.querySelector("#call-view h2").textContent`))
		assert.Contains(t, eval[string](c, `document.querySelector("#call-output").textContent`), "You said: hello 115")
		assert.Equal(t, []string{"115"}, eval[[]string](c, `[...document.querySelectorAll("#calls tbody tr.selected")].map(r => r.dataset.call)`))
		// The page of calls that holds it, and the calls before on demand.
		assert.Equal(t, between(101, 120), eval[[]int](c, rows))
		assert.Equal(t, "120 model calls, calls 101–120 shown, 1 finding.", eval[string](c, status))
		require.False(t, eval[bool](c, `document.getElementById("calls-earlier").hidden`))
		c.do(chromedp.Click(chromedp.ID("calls-earlier")))
		c.waitFor("the earlier calls", `document.querySelectorAll("#calls tbody tr").length === 120`)
		assert.Equal(t, between(1, 120), eval[[]int](c, rows))
		assert.True(t, eval[bool](c, `document.getElementById("calls-earlier").hidden`))
		assert.Equal(t, []string{"115"}, eval[[]string](c, `[...document.querySelectorAll("#calls tbody tr.selected")].map(r => r.dataset.call)`), "call 115 stays open")
		assert.Equal(t, "115", eval[string](c, `document.getElementById("call-view").dataset.call`))
	})

	t.Run("a link to a call past the last says so", func(t *testing.T) {
		c.open("/ui/conversations/" + conv + "/calls?call=999")
		c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
		assert.Equal(t, "There is no model call #999: the conversation has 120 model calls.", eval[string](c, `document.getElementById("calls-notice")?.textContent ?? ""`))
		assert.Equal(t, "120 model calls, calls 1–100 shown, 1 finding (1 in calls not shown yet).", eval[string](c, status))
		assert.Equal(t, between(1, 100), eval[[]int](c, rows))
		assert.True(t, eval[bool](c, `document.getElementById("call-view").hidden`))
	})
	c.checkClean()
}
