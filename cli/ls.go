package cli

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newLsCmd) }

func newLsCmd() *cobra.Command {
	var (
		nf     natsFlags
		asJSON bool
		prefix string
		search string
		limit  int
	)
	cmd := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"conversations"},
		Short:   "List conversations, newest first",
		Long: `ls lists the stored conversations, newest first: last activity, events,
model calls, findings (rules their model inputs broke, which
"turnlog replay --check CONV" lists), whether the latest request failed
(with its reason): a worker's chat request, or, for a conversation an app
made through the recording gateway, its latest call (an upstream error, a
cut stream), and its first user message (and, for a fork, what it was
forked from), which tells apart conversations named by ULIDs alone.

  turnlog ls                    # the 20 most recent
  turnlog ls --search support   # IDs containing "support" (any case)
  turnlog ls --id-prefix 01K --limit 100 --json

The counts come from each listed conversation's history, so ls reads only
the conversations it shows (--limit); sorting costs one small read per
matching conversation. The findings are checked in the same read, so they
always follow the rules of this turnlog.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if limit < 1 {
				return fmt.Errorf("--limit %d: use 1 or more", limit)
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx, eventlog.ReadOnly())
			if err != nil {
				return err
			}
			defer nc.Close()
			needle := strings.ToLower(search)
			cs, err := replay.Newest(ctx, l, func(id string) bool {
				return strings.HasPrefix(id, prefix) && strings.Contains(strings.ToLower(id), needle)
			})
			if err != nil {
				return err
			}
			total := len(cs)
			if len(cs) > limit {
				cs = cs[:limit]
			}
			if err := replay.DescribeAll(ctx, l, cs); err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				enc.SetIndent("", "  ")
				return enc.Encode(struct {
					Conversations []replay.Conversation `json:"conversations"`
					Total         int                   `json:"total"`
				}{append([]replay.Conversation{}, cs...), total})
			}
			if total == 0 {
				fmt.Fprintln(cmd.ErrOrStderr(), "no conversations; start one with: turnlog chat -m hello")
				return nil
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "CONVERSATION\tLAST ACTIVITY\tEVENTS\tMODEL CALLS\tFINDINGS\tLAST REQUEST\tFIRST MESSAGE")
			for _, c := range cs {
				last := "ok"
				switch {
				case c.LastRequestFailed:
					last = "failed: " + oneLine(c.LastFailure, 60)
				case c.LastRequestOpen && c.WaitingFor != "":
					last = "open: background response " + oneLine(c.WaitingFor, 40) + " still running, or its end not yet fetched through the gateway"
				case c.LastRequestOpen:
					last = "open: no outcome recorded (in progress, or its gateway stopped)"
				}
				if c.Foreign > 0 {
					last = fmt.Sprintf("%s (not written by turnlog) ignored; %s", plural.Count(c.Foreign, "foreign message"), last)
				}
				if c.Quarantined > 0 {
					last = fmt.Sprintf("%s (turnlog repair %s); %s", plural.Count(c.Quarantined, "quarantined message"), events.CommandArg(c.ID), last)
				}
				findings := "-"
				if c.Findings > 0 {
					// Where to look, in the cell that says there is something.
					findings = fmt.Sprintf("%d (replay --check)", c.Findings)
				}
				first := oneLine(c.FirstMessage, 50)
				if c.ForkedFrom != "" {
					first = strings.TrimSpace(first + " (fork of " + oneLine(c.ForkedFrom, 40) + ")")
				}
				fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\n", c.ID, c.LastActivity.Local().Format(time.DateTime), c.Events, c.ModelCalls, findings, last, first)
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if total > len(cs) {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d of %s shown; use --limit, --id-prefix or --search\n", len(cs), plural.Count(total, "conversation"))
			}
			return nil
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON: {\"conversations\": [...], \"total\": N}")
	cmd.Flags().StringVar(&prefix, "id-prefix", "", "only conversations whose ID starts with this")
	cmd.Flags().StringVar(&search, "search", "", "only conversations whose ID contains this (any case)")
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many")
	return cmd
}

// oneLine shortens s to one line of at most n runes for a table cell,
// without control characters: text a user or a provider wrote must not
// drive the terminal of whoever lists it (an escape sequence can retitle
// the window, hide or rewrite what is shown), nor the bidirectional
// overrides and isolates that would show a cell's text, and the cells
// after it on the line, in another order than it is (an ID that reads
// as another's).
func oneLine(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069 {
			return -1
		}
		return r
	}, terminalText(s))
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
