package cli

import (
	"bufio"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
)

func init() { commands = append(commands, newEraseCmd) }

func newEraseCmd() *cobra.Command {
	var (
		nf    natsFlags
		yes   bool
		forks bool
	)
	cmd := &cobra.Command{
		Use:   "erase <conversation> [--forks]",
		Short: "Remove a conversation's events, snapshot and pending requests (and its forks')",
		Long: `erase removes everything stored about a conversation, for privacy
requests: its events (purged from the events stream), its snapshot, its
history cache, its pending chat requests, the dead letters of requests
sent to it (they keep each request as it was sent) and the recording
gateway's threading entries of its calls (so that an app re-sending the erased
history starts a new conversation). It cannot be undone.

A fork of the conversation (turnlog fork, or a gateway call that branched
it) is a conversation of its own: it keeps its copy of the blocks up to
where it forked, and names this one in its conversation.started
(forked_from). erase finds the forks, and their forks in turn, before it
erases, by reading each stored conversation's first message (one read
each):

  - without --forks it erases the conversation alone, then lists on
    stderr the forks that still hold a copy of its blocks, and the
    command that erases them (turnlog erase --forks <fork>, for each
    direct fork). They still name the erased conversation, so
    "turnlog erase --forks <conversation>" later finds them too.
  - with --forks it erases the forks as well, each as it erases one
    conversation, the forks of forks first and the conversation last, so
    that an interrupted run leaves every remaining fork findable: run it
    again.

Once the conversation is erased, erase searches again, for forks made
while it ran (while the confirmation waited, or by a gateway call between
the search and the erasure): with --forks it erases them too, without it
lists them with the others kept.

Each list comes after a line ending in ':' (the confirmation's
"forks of <conversation> kept (--forks erases them too):" or "forks of
<conversation> erased too:", the final "forks of <conversation> not
erased:" and "conversations not checked:"), one conversation a line, its
ID first, and an empty line after the last.

A conversation whose first message is not a step (a message turnlog did
not write, or a damaged one) cannot be checked: it is listed as not
checked (turnlog replay <ID> shows it, turnlog repair <ID> removes it,
turnlog erase --forks <ID> erases it with its own forks).
With --forks, erase then exits 1 after erasing the forks it found, since
one may have been left. A conversation imported from an export
(turnlog import) names no source and is not found; nor is the
conversation this one was itself forked from, which holds the blocks
before the fork.

Erasing is also how a full store's space is freed: it works when
JetStream's storage is full (it notes the erasure once the events are
gone). It needs the admin's NATS credential; with another it fails,
saying so.

It lists the forks (kept, or erased too) and asks you to type the
conversation ID to confirm; the ID confirms the forks listed too. Without
a terminal it refuses unless --yes is given.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv := args[0]
			if err := events.ValidateConversationID(conv); err != nil {
				return err
			}
			in, stderr := cmd.InOrStdin(), cmd.ErrOrStderr()
			if !yes && !isTerminal(in) {
				return fmt.Errorf("erase %s: refusing without confirmation: stdin is not a terminal; pass --yes to erase without asking", conv)
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			found, err := l.Forks(ctx, conv)
			if err != nil {
				return fmt.Errorf("erase %s: %w; nothing erased (its forks must be known first): try again once NATS answers", conv, err)
			}
			if !yes {
				what := "This erases conversation " + conv + " for good: its events, snapshot and pending requests.\n"
				if forks && len(found.Forks) > 0 {
					what = fmt.Sprintf("This erases conversation %s and its %s for good: their events, snapshots and pending requests.\n",
						conv, plural.Count(len(found.Forks), "fork"))
				}
				fmt.Fprint(stderr, what)
				writeUnchecked(stderr, conv, found.Unchecked)
				if len(found.Forks) > 0 {
					header := "forks of " + conv + " kept (--forks erases them too):"
					if forks {
						header = "forks of " + conv + " erased too:"
					}
					writeForks(stderr, header, found.Forks)
				}
				fmt.Fprint(stderr, "Type the conversation ID to confirm: ")
				line, err := bufio.NewReader(in).ReadString('\n')
				if strings.TrimSpace(line) != conv {
					if err != nil {
						return fmt.Errorf("erase %s: no confirmation (%v); nothing erased", conv, err)
					}
					return fmt.Errorf("erase %s: you typed %q, not the conversation ID; nothing erased", conv, strings.TrimSpace(line))
				}
			}
			// The forks of forks first, the conversation last: each fork
			// an interrupted run leaves still has the one it names, so the
			// same command finds it again.
			var order []string
			if forks {
				for _, f := range slices.Backward(found.Forks) {
					order = append(order, f.Conversation)
				}
			}
			order = append(order, conv)
			for i, c := range order {
				got, err := l.Erase(ctx, c)
				if err != nil {
					if i > 0 {
						return fmt.Errorf("%w (%s erased before it; run the same command again to erase the rest)", err, plural.Count(i, "conversation"))
					}
					return err
				}
				if c == conv && len(order) == 1 && got == (eventlog.Erased{}) {
					// Nothing at all under the ID: a typo, most likely,
					// which must not look like a privacy erasure done.
					return fmt.Errorf("erase %s: no conversation %s: nothing is stored under that ID, so nothing was erased (turnlog ls lists the conversations)", conv, conv)
				}
				fmt.Fprintln(cmd.OutOrStdout(), erasedLine(c, got))
			}
			// A fork made after the search (while the confirmation
			// waited, or by a gateway call or turnlog fork between the
			// search and the erasure) holds a copy too: search again now
			// that the conversation is gone, when no new fork can copy
			// its blocks.
			found, err = eraseLateForks(ctx, cmd.OutOrStdout(), l, conv, forks, found)
			if err != nil {
				return err
			}
			// Said again after the erasure, as with --yes.
			writeUnchecked(stderr, conv, found.Unchecked)
			if !forks {
				writeKept(stderr, conv, found.Forks)
			}
			if forks && len(found.Unchecked) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("erase %s --forks: the forks found are erased, but %s could not be checked (listed above): a fork among them would keep a copy of its blocks; remove what is not a step (turnlog repair <ID>), then run the same command again",
					conv, plural.Count(len(found.Unchecked), "conversation"))}
			}
			return nil
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "erase without asking (required without a terminal)")
	cmd.Flags().BoolVar(&forks, "forks", false, "erase its forks too, and theirs in turn (conversations whose conversation.started names it in forked_from)")
	return cmd
}

// erasedLine says what Erase removed of conversation c.
func erasedLine(c string, got eventlog.Erased) string {
	snap := "no snapshot"
	switch {
	case got.Snapshot && got.History:
		snap = "its snapshot and history cache"
	case got.Snapshot:
		snap = "its snapshot"
	case got.History:
		// Not "no snapshot and history cache", which reads as neither.
		snap = "no snapshot, its history cache"
	}
	threading := ""
	if got.Threading > 0 {
		threading = ", " + plural.Count(got.Threading, "gateway threading entry")
	}
	if got.Background > 0 {
		threading += ", " + plural.Count(got.Background, "background response followed")
	}
	if got.DeadLetters > 0 {
		threading += ", " + plural.Count(got.DeadLetters, "dead letter")
	}
	return fmt.Sprintf("erased %s: %s, %s, %s%s", c, plural.Count(int(got.Messages), "event message"), snap, plural.Count(int(got.Requests), "pending request"), threading)
}
