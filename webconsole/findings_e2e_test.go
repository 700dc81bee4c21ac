package webconsole_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// TestE2ETimelineMarksFindings: a conversation recorded through the
// library whose second request got a second system prompt; the timeline
// marks that model call, and only it, with the rule and the blocks, and
// its input Turn flags the blocks concerned.
func TestE2ETimelineMarksFindings(t *testing.T) {
	c := startConsole(t)
	ctx := context.Background()
	const conv = "e2e-findings"
	echo := engine.EngineFunc(func(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: "noted"}}}, nil
	})
	for i, q := range []string{"first", "second"} {
		turn, err := c.log.Load(ctx, conv)
		require.NoError(t, err)
		tx := engine.NewTx(turn, engine.NewID(), engine.WithLog(c.log), engine.WithModel("echo"))
		id := "prompt-" + q
		require.NoError(t, tx.Emit("app.prompt", events.SystemPromptSet{BlockID: id, Text: "Be kind (" + q + ").", Index: len(tx.Turn().Blocks)}))
		require.NoError(t, tx.Emit("app", events.UserAppended{BlockID: engine.NewID(), Text: q}))
		require.NoError(t, engine.Loop{Handler: engine.Chain(echo)}.Run(ctx, tx), "request %d", i)
		require.NoError(t, tx.Commit(ctx))
	}

	c.open("/ui/")
	c.waitFor("the token dialog", `document.getElementById("token-dialog").open`)
	c.do(chromedp.SendKeys(chromedp.ID("token-input"), e2eToken), chromedp.Click(chromedp.ID("token-ok")))
	c.waitFor("the list", `document.getElementById("conversation-list").dataset.ready === "true"`)
	c.open("/ui/conversations/" + conv)
	c.waitFor("the timeline", `document.getElementById("timeline").dataset.ready === "true"`)

	marked := `[...document.querySelectorAll("#timeline tr.has-findings")].map(r => Number(r.dataset.n))`
	calls := `[...document.querySelectorAll("#timeline tr.model-call")].map(r => Number(r.dataset.n))`
	all := eval[[]int](c, calls)
	require.Len(t, all, 2)
	assert.Equal(t, []int{all[1]}, eval[[]int](c, marked), "the second model call, and only it, is marked")
	assert.Equal(t, []string{"duplicate_system_prompt"},
		eval[[]string](c, `[...document.querySelectorAll("#timeline tr.has-findings li.finding")].map(li => li.dataset.rule)`))
	assert.Equal(t, []string{"prompt-first", "prompt-second"},
		eval[[]string](c, `[...document.querySelectorAll("#timeline tr.has-findings li.finding code.block-id")].map(e => e.textContent)`))
	assert.Contains(t, eval[string](c, `document.getElementById("timeline-status").textContent`), "1 finding (replay --check).")
	c.screenshot("timeline-findings")

	c.do(chromedp.Click(chromedp.CSS("#timeline tr.has-findings")))
	c.waitFor("the input Turn", `document.getElementById("turn-dialog").open`)
	assert.Equal(t, []string{"prompt-first", "prompt-second"},
		eval[[]string](c, `[...document.querySelectorAll("#turn-view li.block.flagged")].map(e => e.dataset.id)`), "the blocks concerned are flagged")
	c.checkClean()
}
