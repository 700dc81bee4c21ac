package webconsole_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 23: the console's preview accepted typos silently. The editor
// lists each warning of the template with its line and column as it is
// typed (from the preview) and after saving (from PUT), a click selects
// the construct, and a clean template shows none.
func TestE2ETemplateEditorShowsWarnings(t *testing.T) {
	c := startConsole(t)
	c.open("/ui/template")
	c.waitFor("the token dialog", `document.getElementById("token-dialog").open`)
	c.do(chromedp.SendKeys(chromedp.ID("token-input"), e2eToken), chromedp.Click(chromedp.ID("token-ok")))
	c.waitFor("the variable buttons", `document.querySelectorAll("#variable-buttons button").length >= 10 && !document.getElementById("token-dialog").open`)
	// The template loads beside the variables: cleared before it arrives,
	// the editor would get it back under what is typed.
	c.waitFor("the template", `document.getElementById("template-source").dataset.default !== undefined`)

	const typos = "Notes: [fiel:README.md]\nToday is [system:dat\n[if git:branch]On a branch."
	c.clear("template-source")
	c.do(chromedp.SendKeys(chromedp.ID("template-source"), typos))
	c.waitFor("the warnings", `document.querySelectorAll("#template-warning-list li").length === 3 && !document.getElementById("template-warnings").hidden`)
	items := eval[[]string](c, `Array.from(document.querySelectorAll("#template-warning-list li")).map((li) => li.textContent)`)
	require.Len(t, items, 3)
	assert.Contains(t, items[0], `line 1, column 8 unknown variable type "fiel" in [fiel:README.md]`)
	assert.Contains(t, items[1], "line 2, column 10 [system:dat is not closed by ']' on its line")
	assert.Contains(t, items[2], "line 3, column 1 [if git:branch] has no matching [endif]")

	// A click selects the construct in the source.
	c.do(chromedp.Click(chromedp.CSS(`#template-warning-list li:nth-child(2) button`)))
	assert.Equal(t, "[system:dat", eval[string](c, `(() => { const ta = document.getElementById("template-source");
		return ta.value.slice(ta.selectionStart, ta.selectionEnd); })()`))

	// Saved all the same, the warnings still listed.
	c.do(chromedp.Click(chromedp.ID("template-save")))
	c.waitFor("saved", `document.getElementById("template-status").textContent.startsWith("Saved")`)
	assert.Equal(t, typos, c.api("GET", "/system-prompt", nil)["template"])
	assert.Equal(t, 3, eval[int](c, `document.querySelectorAll("#template-warning-list li").length`))
	c.screenshot("template-warnings")

	// Fixed: none left.
	c.clear("template-source")
	c.do(chromedp.SendKeys(chromedp.ID("template-source"), "Today is [system:date]."))
	c.waitFor("no warnings", `document.getElementById("template-warnings").hidden && document.querySelectorAll("#template-warning-list li").length === 0`)
	c.checkClean()
}
