package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newImportCmd) }

func newImportCmd() *cobra.Command {
	var (
		nf     natsFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "import <file>...",
		Short: "Turn OpenAI chat messages JSON files into conversations",
		Long: `import reads chat files in the shape turnlog export writes
({"id", "model", "messages", "created_at", "updated_at", "metadata"}) and
records each as a conversation: conversation.started (metadata as data)
and one event per block, by actor "import", all in one message, so a file
lands whole or not at all. The conversation ID is the file's "id" (or
"chat-" and a hash of the content when it has none).

Nothing is invented: a file without a system message gives a conversation
without one (when it is continued, the profile's middlewares add theirs,
recorded as events like any other). A file's system message is recorded
with systemprompt.source "import" and stays the conversation's one prompt
when it is continued: profiles keep it (prompt_policy: keep, the default)
or replace its text in place (prompt_policy: replace), never put a second
prompt in front of it. See turnlog prompt to change or lock it by hand.

Every file is checked before anything is written: an invalid file is
reported with its path and what is wrong, and then nothing is imported.
Importing the same content again changes nothing (its request ID is
derived from the content); a conversation that already holds other events
is refused.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			now := time.Now()
			var plans []*replay.ImportPlan
			var bad []error
			for _, path := range args {
				data, err := os.ReadFile(path)
				if err != nil {
					bad = append(bad, err)
					continue
				}
				c, err := replay.ParseChat(data)
				if err != nil {
					bad = append(bad, fmt.Errorf("%s: %w", path, err))
					continue
				}
				p, err := replay.PlanImport(path, c, now)
				if err != nil {
					bad = append(bad, err)
					continue
				}
				plans = append(plans, p)
			}
			if len(bad) > 0 {
				return fmt.Errorf("import: nothing imported; fix these files and run again: %w", errors.Join(bad...))
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			res, err := replay.Import(ctx, l, plans)
			if len(res) == 0 {
				return err
			}
			if werr := write(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) error {
				for _, r := range res {
					if r.Status == replay.StatusUnchanged {
						fmt.Fprintf(w, "%s: %s unchanged: this content was imported before\n", r.Path, r.Conversation)
					} else {
						fmt.Fprintf(w, "%s: imported as %s (%s)\n", r.Path, r.Conversation, plural.Count(r.Events, "event"))
					}
				}
				return nil
			}); werr != nil && err == nil {
				err = werr
			}
			return err
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
