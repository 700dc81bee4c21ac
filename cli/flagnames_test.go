package cli

import (
	"regexp"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
)

// TestFlagPlaceholdersAreNames: --help shows a flag's value as the first
// word its usage quotes with backquotes (pflag.UnquoteUsage), so a usage
// that quotes a command (`turnlog serve`) showed "--data turnlog serve" in
// every client command's --help. Each placeholder is one word.
func TestFlagPlaceholdersAreNames(t *testing.T) {
	word := regexp.MustCompile(`^\S*$`)
	var visit func(c *cobra.Command)
	visit = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			name, _ := pflag.UnquoteUsage(f)
			assert.Regexp(t, word, name, "%s --%s", c.CommandPath(), f.Name)
		})
		for _, sub := range c.Commands() {
			visit(sub)
		}
	}
	visit(newRootCmd())
}
