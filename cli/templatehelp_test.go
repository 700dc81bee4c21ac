package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTemplateHelpSaysWhatSetDoes (issue 23, item 6): `template --help`
// said a new template changes only the conversations started afterwards,
// `template set --help` that started ones change at their next compaction.
// The code does the latter (profile's TestCompactionTemplate: a compaction
// renders the global template as it is then, unless the profile says
// compaction_template: original); both texts must say so.
func TestTemplateHelpSaysWhatSetDoes(t *testing.T) {
	for _, args := range [][]string{{"template", "--help"}, {"template", "set", "--help"}} {
		out, code := runCmd(t, nil, "", args...)
		require.Equal(t, 0, code, out)
		text := strings.Join(strings.Fields(out), " ")
		assert.Contains(t, text, "keep their prompt byte for byte until their next compaction", "%v", args)
		assert.Contains(t, text, "compaction_template: original", "%v", args)
		assert.NotContains(t, text, "changes only the conversations started afterwards", "%v", args)
	}
}
