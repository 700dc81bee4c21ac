package webconsole_test

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/engine/scripted"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
)

// recordWithSecondPrompt records conv through the library as a Go team's
// backend would: the scripted engine (which records its wire request),
// the word_count tool, and a system-prompt middleware with the bug
// check's tests describe: on the second request it appends a second
// system prompt. Request 1 is one model call, request 2 ("count the
// words ...") two: calls 2 and 3, and call 2 first gets the second prompt.
func recordWithSecondPrompt(t *testing.T, c *console, conv string) {
	t.Helper()
	recordRequests(t, c, conv, []string{"hello", "count the words in one two three"}, 2)
}

// recordRequests records one request per question as
// recordWithSecondPrompt describes, the second system prompt appended on
// request number second (counting from 1). A question other than "count
// the words ..." is one model call.
func recordRequests(t *testing.T, c *console, conv string, questions []string, second int) {
	t.Helper()
	ctx := context.Background()
	request := 0
	prompt := func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			systems := 0
			for _, b := range tx.Turn().Blocks {
				if b.Kind == events.KindSystem {
					systems++
				}
			}
			switch {
			case systems == 0:
				if err := tx.Emit("app.prompt", events.SystemPromptSet{BlockID: "prompt-1", Text: "You are the word desk.", Trust: events.Trusted}); err != nil {
					return err
				}
			case request == second && systems == 1:
				if err := tx.Emit("app.prompt", events.SystemPromptSet{BlockID: "prompt-2", Text: "You are the word desk. Be brief.",
					Index: len(tx.Turn().Blocks), Trust: events.Trusted}); err != nil {
					return err
				}
			}
			return next(ctx, tx)
		}
	}
	tools, err := engine.NewTools(engine.WordCount())
	require.NoError(t, err)
	loop := engine.Loop{Handler: engine.Chain(scripted.New(nil), prompt), Tools: tools}
	for _, q := range questions {
		request++
		turn, err := c.log.Load(ctx, conv)
		require.NoError(t, err)
		tx := engine.NewTx(turn, engine.NewID(), engine.WithLog(c.log), engine.WithModel("scripted-1"), engine.WithTools(tools.Specs()...))
		require.NoError(t, tx.Emit("app", events.UserAppended{BlockID: engine.NewID(), Text: q}))
		require.NoError(t, tx.Commit(ctx))
		require.NoError(t, loop.Run(ctx, tx), "request %d", request)
		require.NoError(t, tx.Emit("app", events.RequestCompleted{Inferences: tx.ModelCalls()}))
		require.NoError(t, tx.Commit(ctx))
	}
}

// TestE2ECallsViewShowsFindings (issue 28): a call whose input broke a
// rule of replay --check is marked in the list of calls; opened, it lists
// the finding with its rule and blocks, and the blocks are highlighted in
// the request it sent and in the diff to the previous call. The list of
// conversations filters those with findings.
func TestE2ECallsViewShowsFindings(t *testing.T) {
	c := startConsole(t)
	const conv = "e2e-call-findings"
	recordWithSecondPrompt(t, c, conv)
	c.ask("e2e-clean", "hello")
	checked, err := replay.Check(context.Background(), c.log, conv)
	require.NoError(t, err)
	require.Len(t, checked.Findings, 1, "%+v", checked.Findings)
	f := checked.Findings[0]
	require.Equal(t, 2, f.Call)
	require.Equal(t, "duplicate_system_prompt", string(f.Rule))
	require.Equal(t, []string{"prompt-1", "prompt-2"}, f.Blocks)

	// The list: the findings count as ls shows it, and the filter.
	c.seedToken()
	c.open("/ui/")
	c.waitFor("the list", `document.getElementById("conversation-list").dataset.ready === "true"`)
	rows := `[...document.querySelectorAll("#conversation-list tbody tr")].map(r => r.dataset.id + ":" + r.querySelector("td.findings").textContent)`
	assert.Equal(t, []string{"e2e-clean:", conv + ":1"}, eval[[]string](c, rows))
	c.do(chromedp.Click(chromedp.ID("with-findings")))
	c.waitFor("the filtered list", `document.querySelectorAll("#conversation-list tbody tr").length === 1`)
	assert.Equal(t, []string{conv + ":1"}, eval[[]string](c, rows))
	assert.Equal(t, "1 conversation with findings, newest first.", eval[string](c, `document.getElementById("list-status").textContent`))
	assert.Contains(t, eval[string](c, `location.search`), "findings=true", "the filter is in the URL, to share or reload")
	c.follow(chromedp.Click(chromedp.CSS(`#conversation-list td.findings a`)))

	// The calls: call 2, and only it, is marked.
	c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
	assert.Equal(t, []string{"2"}, eval[[]string](c, `[...document.querySelectorAll("#calls tbody tr.has-findings")].map(r => r.dataset.call)`))
	assert.Equal(t, []string{"duplicate_system_prompt"}, eval[[]string](c, `[...document.querySelectorAll("#calls tr.has-findings td.findings .badge")].map(e => e.textContent)`))
	assert.Equal(t, "3 model calls, 1 finding.", eval[string](c, `document.getElementById("calls-status").textContent`))

	c.do(chromedp.Click(chromedp.CSS(`#calls tr[data-call="2"]`)))
	c.waitFor("the call", `document.getElementById("call-view").dataset.ready === "true"`)
	// The finding, with its rule and blocks.
	assert.Equal(t, []string{"duplicate_system_prompt"}, eval[[]string](c, `[...document.querySelectorAll("#call-view .call-findings li.finding")].map(e => e.dataset.rule)`))
	assert.Equal(t, []string{"prompt-1", "prompt-2"}, eval[[]string](c, `[...document.querySelectorAll("#call-view .call-findings code.block-id")].map(e => e.textContent)`))
	// Highlighted in the request it sent: both prompts' texts.
	assert.Equal(t, "matches the record", eval[string](c, `document.querySelector("#call-wire .badge.verified").textContent`))
	assert.Equal(t, []string{`"You are the word desk."`, `"You are the word desk. Be brief."`},
		eval[[]string](c, `[...document.querySelectorAll("#call-wire pre.json mark.finding")].map(e => e.textContent)`))
	assert.Equal(t, []string{"duplicate_system_prompt", "duplicate_system_prompt"},
		eval[[]string](c, `[...document.querySelectorAll("#call-wire pre.json mark.finding")].map(e => e.dataset.rules)`))
	// And in the diff to call 1: the new prompt was added, and both
	// prompts are marked on this call's side; call 1's side has the first.
	assert.Equal(t, []string{"added system prompt-2"}, eval[[]string](c, `[...document.querySelectorAll("#call-diff li.change")].map(e => e.textContent.replace(/\s+/g, " ").trim()).filter(s => s.includes("system"))
		.map(s => s.split(" ").slice(0, 3).join(" "))`))
	assert.Equal(t, []string{"prompt-1", "prompt-2"}, eval[[]string](c, `[...document.querySelectorAll("#call-diff .side-b .block.finding")].map(e => e.dataset.id)`))
	assert.Equal(t, []string{"prompt-1"}, eval[[]string](c, `[...document.querySelectorAll("#call-diff .side-a .block.finding")].map(e => e.dataset.id)`))
	assert.Equal(t, "finding: duplicate_system_prompt", eval[string](c, `document.querySelector("#call-diff .side-b .block.finding[data-id='prompt-2'] .badge.finding").textContent`))
	c.screenshot("calls-findings")

	// A call without findings shows none and marks nothing.
	c.do(chromedp.Click(chromedp.CSS(`#calls tr[data-call="3"]`)))
	c.waitFor("call 3", `document.getElementById("call-view").dataset.call === "3" && document.getElementById("call-view").dataset.ready === "true"`)
	assert.Zero(t, eval[int](c, `document.querySelectorAll("#call-view .call-findings, #call-wire mark.finding, #call-diff .block.finding").length`))
	c.checkClean()
}
