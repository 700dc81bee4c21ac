package cli

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
)

func init() { commands = append(commands, newEraseCmd) }

func newEraseCmd() *cobra.Command {
	var (
		nf  natsFlags
		yes bool
	)
	cmd := &cobra.Command{
		Use:   "erase <conversation>",
		Short: "Remove a conversation's events, snapshot and pending requests",
		Long: `erase removes everything stored about a conversation, for privacy
requests: its events (purged from the events stream), its snapshot, its
history cache, its pending chat requests and the recording gateway's
threading entries of its calls (so that an app re-sending the erased
history starts a new conversation). It cannot be undone.

A fork of the conversation (turnlog fork, a gateway call that branched it,
an import of its export) is a conversation of its own: it keeps its copy
of the blocks up to where it forked, and names this one in its
conversation.started (forked_from). Erase the forks too for a privacy
request; turnlog replay <fork> shows forked_from on its first event.

Erasing is also how a full store's space is freed: it works when
JetStream's storage is full (it notes the erasure once the events are
gone). It needs the admin's NATS credential; with another it fails,
saying so.

It asks you to type the conversation ID to confirm. Without a terminal it
refuses unless --yes is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv := args[0]
			if err := events.ValidateConversationID(conv); err != nil {
				return err
			}
			if !yes {
				in := cmd.InOrStdin()
				if !isTerminal(in) {
					return fmt.Errorf("erase %s: refusing without confirmation: stdin is not a terminal; pass --yes to erase without asking", conv)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "This erases conversation %s for good: its events, snapshot and pending requests.\nType the conversation ID to confirm: ", conv)
				line, err := bufio.NewReader(in).ReadString('\n')
				if strings.TrimSpace(line) != conv {
					if err != nil {
						return fmt.Errorf("erase %s: no confirmation (%v); nothing erased", conv, err)
					}
					return fmt.Errorf("erase %s: you typed %q, not the conversation ID; nothing erased", conv, strings.TrimSpace(line))
				}
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			got, err := l.Erase(ctx, conv)
			if err != nil {
				return err
			}
			snap := "no snapshot"
			if got.Snapshot {
				snap = "its snapshot"
			}
			if got.History {
				snap += " and history cache"
			}
			threading := ""
			if got.Threading > 0 {
				threading = ", " + plural.Count(got.Threading, "gateway threading entry")
			}
			fmt.Fprintf(cmd.OutOrStdout(), "erased %s: %s, %s, %s%s\n", conv, plural.Count(int(got.Messages), "event message"), snap, plural.Count(int(got.Requests), "pending request"), threading)
			return nil
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "erase without asking (required without a terminal)")
	return cmd
}
