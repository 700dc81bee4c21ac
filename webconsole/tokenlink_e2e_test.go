package webconsole_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
)

// TestE2ETokenFromTheAddress: the address turnlog serve prints,
// http://HOST:PORT/#token=..., opens the console with the token: no dialog,
// the token kept for the tab, and the address bar left without it. A wrong
// one in the address gets the dialog, as a wrong typed one does.
func TestE2ETokenFromTheAddress(t *testing.T) {
	c := startConsole(t)
	c.ask("e2e-link", "hello")

	c.open("/#token=" + e2eToken)
	c.waitFor("the list", `document.getElementById("conversation-list").dataset.ready === "true"`)
	assert.Equal(t, []string{"e2e-link"}, eval[[]string](c, `[...document.querySelectorAll("#conversation-list tbody tr")].map(r => r.dataset.id)`))
	assert.False(t, eval[bool](c, `document.getElementById("token-dialog").open`), "the link's token is used, not asked for")
	assert.Equal(t, e2eToken, eval[string](c, `sessionStorage.getItem("turnlog.token")`))
	assert.Equal(t, "set", eval[string](c, `document.getElementById("token-state").textContent`))
	assert.Equal(t, c.url+"/ui/", eval[string](c, `location.href`), "the token is taken out of the address")

	// Pasted into the same tab: only the fragment changes, and the page
	// loads again with the new token.
	c.follow(chromedp.Evaluate[chromedp.Void](`location.hash = "#token=wrong-token"`))
	c.waitFor("the token dialog", `document.getElementById("token-dialog").open`)
	assert.Contains(t, eval[string](c, `document.getElementById("token-reason").textContent`), "wrong")
	assert.Equal(t, c.url+"/ui/", eval[string](c, `location.href`))

	// A link opened anew (here to another page) works the same way.
	c.open("/ui/conversations/e2e-link#token=" + e2eToken)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	assert.False(t, eval[bool](c, `document.getElementById("token-dialog").open`))
	assert.Equal(t, c.url+"/ui/conversations/e2e-link", eval[string](c, `location.href`))
	c.checkClean()
}
