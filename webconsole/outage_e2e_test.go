package webconsole_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestE2ETemplateEditorDuringAnOutage: when the templates store cannot be
// read, GET /system-prompt answers the built-in default and says so; the
// editor shows that it is not the stored template rather than "no template
// set yet".
func TestE2ETemplateEditorDuringAnOutage(t *testing.T) {
	c := startConsole(t)
	require.NoError(t, c.log.JetStream().DeleteKeyValue(context.Background(), c.log.Names().TemplatesBucket))
	c.seedToken()

	c.open("/ui/template")
	c.waitFor("the error", `!document.getElementById("template-error").hidden`)
	assert.Contains(t, eval[string](c, `document.getElementById("template-error").textContent`), "The template store is unavailable")
	assert.Equal(t, "the built-in default (the stored template could not be read)", eval[string](c, `document.getElementById("template-state").textContent`))
	c.checkClean()
}
