package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newForkCmd) }

func newForkCmd() *cobra.Command {
	var (
		nf     natsFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "fork <conversation>@<n> [new-id]",
		Short: "Start a new conversation from a point of another, for what-if debugging",
		Long: `fork starts a new conversation from the Turn after <conversation>'s n-th
event (counting from 1, as replay numbers events; without @n, from its
latest Turn). The new conversation's first event is conversation.started
with forked_from, forked_at and that Turn's blocks and data, so its log is
complete on its own and says where it came from. Send it chat requests to
see what would have happened.

Without new-id an ID is generated (a ULID). It prints the new ID.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			from, n := args[0], 0
			if i := strings.LastIndexByte(from, '@'); i >= 0 {
				v, err := strconv.Atoi(from[i+1:])
				if err != nil || v < 1 {
					return fmt.Errorf("%q: after '@' comes an event position from 1 (replay shows them)", args[0])
				}
				from, n = from[:i], v
			}
			to := ""
			if len(args) == 2 {
				to = args[1]
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			f, err := replay.Fork(ctx, l, from, n, to)
			if err != nil {
				return err
			}
			return write(cmd.OutOrStdout(), asJSON, f, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "forked %s@%d into %s (%s)\n", f.From, f.At, f.Conversation, plural.Count(f.Blocks, "block"))
				return err
			})
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}
