package replay_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAuditLinksNoProvider checks that a program importing replay (to
// verify, diff or check a log), or engine/wire (to render recorded
// requests with whatever engines the program registered), links no
// provider SDK, nor do the packages
// a program of its own chain is built from: the engines it does not
// import stay out of its binary (they register themselves where they are
// imported; see profile.RegisterEngine).
func TestAuditLinksNoProvider(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to list the packages' dependencies")
	}
	sdks := []string{"github.com/openai/openai-go", "github.com/anthropics/anthropic-sdk-go",
		"github.com/turnlog/turnlog/engine/openai", "github.com/turnlog/turnlog/engine/responses", "github.com/turnlog/turnlog/engine/anthropic"}
	for _, pkg := range []string{"./replay", "./engine/wire", "./profile", "./worker", "./engine", "./middlewares", "./eventlog"} {
		t.Run(pkg, func(t *testing.T) {
			cmd := exec.Command(goBin, "list", "-deps", pkg)
			cmd.Dir = ".."
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "go list -deps %s: %s", pkg, out)
			deps := strings.Fields(string(out))
			require.Contains(t, deps, "github.com/turnlog/turnlog/events", "the listing is of turnlog's packages")
			for _, d := range deps {
				for _, sdk := range sdks {
					assert.False(t, d == sdk || strings.HasPrefix(d, sdk+"/"), "%s links %s", pkg, d)
				}
			}
		})
	}
}
