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

// openRecordedCall records one Chat Completions call of conv through the
// gateway's recorder, from its request and response bodies, and opens the
// call's page in the console.
func openRecordedCall(t *testing.T, c *console, conv, request, response string) {
	t.Helper()
	out, err := calls.ParseResponse(calls.ChatCompletions, []byte(response))
	require.NoError(t, err)
	openRecordedOutput(t, c, conv, calls.ChatCompletions, request, out)
}

// openRecordedOutput is openRecordedCall of a call of api whose output,
// read already (from a stream, say), is out.
func openRecordedOutput(t *testing.T, c *console, conv string, api calls.API, request string, out *calls.Output) {
	t.Helper()
	rec, err := gateway.NewRecorder(gateway.Config{Log: c.log})
	require.NoError(t, err)
	p, err := rec.Begin(t.Context(), gateway.Call{API: api, Conversation: conv, Body: []byte(request)})
	require.NoError(t, err)
	require.NoError(t, rec.Finish(t.Context(), p, calls.Outcome{Output: out}))

	c.seedToken()
	c.open("/ui/conversations/" + conv + "/calls")
	c.waitFor("the calls", `document.getElementById("calls").dataset.ready === "true"`)
	c.do(chromedp.Click(chromedp.CSS(`#calls tr[data-call="1"]`)))
	c.waitFor("the call", `document.getElementById("call-view").dataset.ready === "true"`)
}

// TestE2EOtherChoices: a call that asked for two answers shows the second
// beside the first's output on its page.
func TestE2EOtherChoices(t *testing.T) {
	c := startConsole(t)
	openRecordedCall(t, c, "e2e-choices", `{"model":"m","n":2,"messages":[{"role":"user","content":"Name a colour."}]}`,
		`{"id":"c","object":"chat.completion","model":"m","choices":[`+
			`{"index":0,"message":{"role":"assistant","content":"Blue."},"finish_reason":"stop"},`+
			`{"index":1,"message":{"role":"assistant","content":"Green."},"finish_reason":"stop"}]}`)
	assert.Contains(t, eval[string](c, `document.querySelector("#call-output").textContent`), "Blue.")
	assert.Equal(t, "Green.", eval[string](c, `document.querySelector('#call-other-choices li[data-choice="1"] pre').textContent`))
	c.checkClean()
}

// TestE2ELogprobs: a call that asked for logprobs shows each token of its
// answer with its probability and the alternatives the model weighed.
func TestE2ELogprobs(t *testing.T) {
	c := startConsole(t)
	openRecordedCall(t, c, "e2e-logprobs", `{"model":"m","logprobs":true,"top_logprobs":2,"messages":[{"role":"user","content":"Spam? yes or no"}]}`,
		`{"id":"c","object":"chat.completion","model":"m","choices":[`+
			`{"index":0,"message":{"role":"assistant","content":"no"},"logprobs":{"content":[`+
			`{"token":"no","logprob":-0.105360516,"bytes":[110,111],"top_logprobs":[{"token":"no","logprob":-0.105360516,"bytes":[110,111]},{"token":"yes","logprob":-2.302585093,"bytes":[121,101,115]}]}`+
			`],"refusal":null},"finish_reason":"stop"}]}`)
	assert.Equal(t, "Log probabilities of 1 token", eval[string](c, `document.querySelector("#call-logprobs h3").textContent`))
	assert.Equal(t, []string{`"no"`, "90.0%", `"yes" 10.0%`}, eval[[]string](c, `[...document.querySelectorAll("#call-logprobs tbody td")].map(td => td.textContent)`))
	c.checkClean()
}
