package webconsole_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestE2ECallHintRunsForAConversationBeginningWithADash: a model call's
// view shows the command that prints it; for a conversation whose ID
// begins with '-', the ID goes after "--", or the command reads it as
// flags (as every command turnlog prints does).
func TestE2ECallHintRunsForAConversationBeginningWithADash(t *testing.T) {
	c := startConsole(t)
	const conv = "-e2e-dash"
	c.ask(conv, "hello")
	c.seedToken()
	c.open("/ui/conversations/" + conv + "/calls?call=1")
	c.waitFor("the call", `document.getElementById("call-view").dataset.ready === "true"`)
	hint := eval[string](c, `document.querySelector("#call-view .call-meta code").textContent`)
	assert.Equal(t, "turnlog replay --inference 1 -- "+conv, hint)
	c.checkClean()
}
