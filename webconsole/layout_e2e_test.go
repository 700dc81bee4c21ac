package webconsole_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Issue 28 (what people saw): the input Turn's modal left the page below
// the fold uncovered, and the system prompt was cut through the middle of
// a line, in the timeline and in the modal.
func TestE2EModelCallModalCoversThePageAndPromptsShowWholeLines(t *testing.T) {
	c := startConsole(t)
	var prompt []string
	for i := range 14 {
		prompt = append(prompt, strings.Repeat("Rule number "+string(rune('A'+i))+" of the house. ", 2))
	}
	c.api("PUT", "/system-prompt", map[string]string{"template": strings.Join(prompt, "\n")})
	const conv = "e2e-long"
	for _, q := range []string{"hello", "count the words in one two three", "hello again", "and again", "once more"} {
		c.ask(conv, q)
	}
	c.seedToken()
	c.open("/ui/conversations/" + conv)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)
	require.Greater(t, eval[int](c, `document.documentElement.scrollHeight`), 2*eval[int](c, `innerHeight`), "the page runs below the fold")

	// In the timeline the prompt box shows whole lines: its height is a
	// whole number of lines, and the rest scrolls.
	lines := func(sel string) float64 {
		return eval[float64](c, `(() => { const e = document.querySelector(`+quoteJS(sel)+`);
			return e.clientHeight / parseFloat(getComputedStyle(e).lineHeight); })()`)
	}
	inTimeline := lines("#timeline tr.model-call .prompt-text")
	assert.InDelta(t, float64(int(inTimeline+0.5)), inTimeline, 0.02, "the timeline's prompt box holds whole lines, not %.2f", inTimeline)

	// A model call below the fold: the page stays where it was while its
	// input is open, and after.
	const row = `document.querySelectorAll("#timeline tr.model-call")[3]`
	eval[any](c, row+`.scrollIntoView({block: "center"})`)
	scrolled := eval[float64](c, `scrollY`)
	require.Positive(t, scrolled)
	at := eval[float64](c, row+`.getBoundingClientRect().top`)
	n := eval[int](c, `Number(`+row+`.dataset.n)`)
	c.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`#timeline tr[data-n="%d"]`, n))))
	c.waitFor("the input Turn", `document.getElementById("turn-dialog").open`)
	assert.Contains(t, eval[string](c, `document.getElementById("turn-title").textContent`), "model call #4")
	assert.Equal(t, at, eval[float64](c, row+`.getBoundingClientRect().top`), "the page did not move under the modal")

	// The modal shows the whole prompt, nothing cut.
	sys := `document.querySelector("#turn-view .block.kind-system .block-text")`
	assert.LessOrEqual(t, eval[int](c, sys+`.scrollHeight`), eval[int](c, sys+`.clientHeight`), "the system prompt is shown whole in the modal")
	assert.Equal(t, strings.Join(prompt, "\n"), eval[string](c, sys+`.textContent`))

	// The overlay covers the page, below the fold too: the wheel does not
	// scroll the page out from under it, and a picture of the whole page
	// is dimmed from top to bottom.
	c.do(chromedp.MouseEvent(input.DispatchMouseEventTypeMouseWheel, 20, 900, func(p *input.DispatchMouseEventParams) { p.DeltaX, p.DeltaY = 1, 3000 }))
	time.Sleep(300 * time.Millisecond) // the wheel scrolls asynchronously, if it scrolls
	assert.Equal(t, at, eval[float64](c, row+`.getBoundingClientRect().top`), "the wheel does not scroll the page under the modal")
	ctx, cancel := context.WithTimeout(c.tab, time.Minute)
	defer cancel()
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	img, err := png.Decode(bytes.NewReader(shot))
	require.NoError(t, err)
	b := img.Bounds()
	for _, y := range []int{b.Min.Y + 100, b.Max.Y - 3} {
		r, g, bl, _ := img.At(b.Min.X+3, y).RGBA()
		// The page's background is #f7f8fa; under the overlay it is dimmed.
		assert.Less(t, r>>8, uint32(200), "pixel at y=%d of %d is rgb(%d,%d,%d): the overlay does not cover it", y, b.Max.Y, r>>8, g>>8, bl>>8)
	}
	c.screenshot("timeline-input-turn-long")

	c.do(chromedp.Click(chromedp.ID("turn-close")))
	c.waitFor("the modal to close", `!document.getElementById("turn-dialog").open && !document.body.classList.contains("modal-open")`)
	assert.Equal(t, scrolled, eval[float64](c, `scrollY`), "closed, the page is where it was")
	assert.Equal(t, at, eval[float64](c, row+`.getBoundingClientRect().top`))
	c.checkClean()
}

// quoteJS quotes s as a JavaScript string literal.
func quoteJS(s string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(s, `\`, `\\`), `'`, `\'`) + "'"
}
