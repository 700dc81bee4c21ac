package cli

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/repair"
)

func init() { commands = append(commands, newRepairCmd) }

func newRepairCmd() *cobra.Command {
	var (
		nf     natsFlags
		yes    bool
		output string
	)
	cmd := &cobra.Command{
		Use:   "repair <conversation>",
		Short: "Remove what makes a conversation unusable, with an audit record",
		Long: `repair shows, and with --yes removes, what makes a conversation unusable:

- messages on its subject that are not its steps (bytes that do not decode,
  another conversation's events: published by some other NATS client).
  Reads name them and replay shows them as quarantined; every request to
  the conversation fails until they are gone. Each is removed with a
  message.removed event recording its sequence, size, SHA-256, headers and
  why. The events stream never deletes single messages, so when a kept
  message comes before a removed one, the kept messages are stored again,
  byte for byte and in order, and the old ones purged: event positions
  (<conversation>@<n>) stay, stream sequences change.
- orphaned reasoning blocks (a reasoning block not followed by model text
  or a tool call), which the reasoning guard refuses on every request;
  each is removed with a blocks.removed event. A profile can instead drop
  them as they come: list reasoningguard_repair in place of reasoningguard
  in its middlewares.
- model calls the recording gateway left open (it was killed between a
  call's input and its answer) whose gateway no longer runs: a gateway
  closes such a call when the conversation's next call comes, but a first
  call's retry starts a conversation of its own. Each is closed with an
  inference.failed saying so.

The events carry actor "repair" and one cause, so replay shows who did
what. Without --yes nothing changes. Run it while no request of the
conversation is in flight; if it changed meanwhile, run it again.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv := args[0]
			if err := events.ValidateConversationID(conv); err != nil {
				return err
			}
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			plan, err := repair.Inspect(ctx, l, conv)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if !yes || plan.Empty() {
				if asJSON {
					return printJSON(out, plan)
				}
				writePlan(out, plan)
				switch {
				case plan.Empty() && plan.Unfoldable == "":
					fmt.Fprintf(out, "nothing to repair\n")
				case !plan.Empty():
					fmt.Fprintf(out, "nothing changed; run `turnlog repair --yes %s` to do this\n", events.CommandArg(conv))
				}
				return nil
			}
			res, err := repair.Apply(ctx, l, plan)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(out, res)
			}
			closed := ""
			if res.ClosedCalls > 0 {
				closed = ", closed " + plural.Count(res.ClosedCalls, "model call") + " left open"
			}
			fmt.Fprintf(out, "repaired %s: removed %s and %s%s (cause %s); `turnlog replay %s` shows the records\n",
				conv, plural.Count(res.RemovedMessages, "message"), plural.Count(res.RemovedBlocks, "reasoning block"), closed, res.Cause, events.CommandArg(conv))
			return nil
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "do the repair (without it, only show what it would do)")
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// writePlan prints a repair plan; every text another client may have
// written (reasons, headers) is quoted.
func writePlan(w io.Writer, p *repair.Plan) {
	fmt.Fprintf(w, "conversation %s\n", p.Conversation)
	m := p.Messages
	for _, c := range m.Corrupt {
		fmt.Fprintf(w, "  remove message %d (%s, sha256 %s): %s\n", c.Seq, plural.Count(c.Size, "byte"), c.SHA256, printable(c.Reason, 200))
		keys := make([]string, 0, len(c.Headers))
		for k := range c.Headers {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(w, "      header %s: %s\n", printable(k, 60), printable(c.Headers[k], 120))
		}
	}
	if m.Restore > 0 {
		fmt.Fprintf(w, "  store %s again, unchanged and in order (their stream sequences change, event positions do not)\n", plural.Count(m.Restore, "message"))
	}
	if m.Leftovers > 0 {
		fmt.Fprintf(w, "  drop %s an interrupted repair left (their originals stay)\n", plural.Count(m.Leftovers, "copy"))
	}
	if m.Unfinished > 0 {
		fmt.Fprintf(w, "  finish an earlier repair: purge the messages it superseded, below sequence %d\n", m.Unfinished)
	}
	for _, o := range p.Orphans {
		fmt.Fprintf(w, "  remove reasoning block %s at index %d, followed by %s\n", printable(o.ID, 60), o.Index, o.Follower)
	}
	for _, a := range p.Abandoned {
		fmt.Fprintf(w, "  close model call %s as failed: left open since %s by gateway %s, which no longer runs\n", printable(a.InferenceID, 60), a.Started.UTC().Format(time.RFC3339), printable(a.Instance, 60))
	}
	if p.Unfoldable != "" {
		fmt.Fprintf(w, "  the Turn does not fold even without those messages, at %s: this needs a person; `turnlog replay %s` shows the events\n",
			printable(p.Unfoldable, 300), events.CommandArg(p.Conversation))
	}
}
