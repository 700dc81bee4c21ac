package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newExportCmd) }

func newExportCmd() *cobra.Command {
	var (
		nf     natsFlags
		format string
	)
	cmd := &cobra.Command{
		Use:   "export <conversation>",
		Short: "Print a conversation as OpenAI chat messages JSON (or its whole Turn)",
		Long: `export prints a conversation, re-projected from its events, to stdout.

--format openai (the default) is the JSON shape file-based chat tools use:
  {"id", "model", "messages": [{"role", "content", "tool_calls" /
   "tool_call_id", "reasoning_content"}], "created_at", "updated_at",
   "metadata"}
with the active system prompt as the first message and the only one with
role "system" (other system blocks keep their place as "developer"),
tool calls and results as the Chat Completions API has them, reasoning text
as "reasoning_content", the Turn's data as "metadata", and the times of the
first and last events. turnlog import reads it back.

--format turn prints the full Turn (blocks with IDs, kinds, trust and
metadata; data), which diff-turns reads.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "openai" && format != "turn" {
				return fmt.Errorf("--format %q: use openai or turn", format)
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx, eventlog.ReadOnly())
			if err != nil {
				return err
			}
			defer nc.Close()
			prog := newProgress(cmd.ErrOrStderr(), "export "+args[0])
			ex, err := replay.Export(ctx, l, args[0], replay.WithProgress(prog.update))
			prog.done()
			if err != nil {
				return err
			}
			if format == "turn" {
				return write(cmd.OutOrStdout(), true, ex.Turn, nil)
			}
			if left := ex.Chat.Left; len(left) > 0 {
				verb := "hold"
				if len(left) == 1 {
					verb = "holds"
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "export %s: %s %s what chat messages JSON cannot carry, left out (--format turn keeps them):\n  %s\n",
					args[0], plural.Count(len(left), "block"), verb, strings.Join(left, "\n  "))
			}
			return write(cmd.OutOrStdout(), true, ex.Chat, nil)
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVar(&format, "format", "openai", "openai (chat messages) or turn (the full Turn, for diff-turns)")
	return cmd
}
