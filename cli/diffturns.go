package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newDiffTurnsCmd) }

func newDiffTurnsCmd() *cobra.Command {
	var (
		nf     natsFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "diff-turns A B",
		Short: "Compare two Turns block by block; exit 0 equal, 1 different, 2 error",
		Long: `diff-turns compares two Turns block by block, like diff(1) compares files.

Each of A and B is one of:
  FILE               a JSON file: a Turn (turnlog export --format turn) or
                     a chat export (turnlog export); an existing path wins
  CONVERSATION@N     the Turn after the conversation's N-th event (counting
                     from 1, as replay numbers them; @0 is the empty Turn)
  CONVERSATION       the conversation's latest Turn

It lists blocks added, removed, changed (with a text diff) and moved (a
move is one line, not a removal plus an addition), a changed system
prompt, data changes, and on either side duplicated blocks (an ID twice;
system blocks with one text; a run of blocks sent twice, "by": "run" in
JSON, as replay --check's duplicate_blocks; repeated questions and answers
are a conversation, not duplicates) and adjacency violations (a reasoning
block not followed by text or a tool call; a tool result without its
call). Colour on a terminal, none with NO_COLOR set or
when piped; -o json for tools (see docs/auditing.md).

Exit codes: 0 the Turns are equal, 1 they differ, 2 error.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			ld := &turnLoader{nf: &nf}
			defer ld.close()
			a, err := ld.load(cmd.Context(), args[0])
			if err != nil {
				return fmt.Errorf("A: %w", err)
			}
			b, err := ld.load(cmd.Context(), args[1])
			if err != nil {
				return fmt.Errorf("B: %w", err)
			}
			r := replay.Diff(a, b)
			out := cmd.OutOrStdout()
			_, noColor := os.LookupEnv("NO_COLOR")
			color := !noColor && isTerminal(out)
			if err := write(out, asJSON, r, func(w io.Writer) error { return r.WriteText(w, color) }); err != nil {
				return err
			}
			if !r.Equal() {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// turnLoader reads diff-turns operands, connecting to NATS only for the
// first one that needs it.
type turnLoader struct {
	nf  *natsFlags
	nc  *nats.Conn
	log *eventlog.Log
}

func (ld *turnLoader) close() {
	if ld.nc != nil {
		ld.nc.Close()
	}
}

func (ld *turnLoader) load(ctx context.Context, arg string) (*projector.Turn, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return readTurnFile(arg)
	}
	conv, n := arg, -1
	if i := strings.LastIndexByte(arg, '@'); i >= 0 {
		conv = arg[:i]
		v, err := strconv.Atoi(arg[i+1:])
		if err != nil || v < 0 {
			return nil, fmt.Errorf("%q: after '@' comes an event position (0, 1, 2, ...); no file has this name either", arg)
		}
		n = v
	}
	if ld.log == nil {
		nc, l, err := ld.nf.connect(ctx, eventlog.ReadOnly())
		if err != nil {
			return nil, err
		}
		ld.nc, ld.log = nc, l
	}
	if n >= 0 {
		return ld.log.LoadAt(ctx, conv, n)
	}
	t, err := ld.log.Load(ctx, conv)
	if err != nil {
		return nil, err
	}
	if t.Events == 0 {
		return nil, fmt.Errorf("%q is neither a file nor a conversation with events (%w); check the name, or use %s@0 for the empty Turn",
			arg, replay.ErrNoEvents, conv)
	}
	return t, nil
}

// readTurnFile reads a Turn exported with `export --format turn`, or a
// chat export, whose messages become blocks.
func readTurnFile(path string) (*projector.Turn, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(data, &keys); err != nil {
		return nil, fmt.Errorf("%s: not a JSON object: %v", path, err)
	}
	switch {
	case keys["messages"] != nil:
		c, err := replay.ParseChat(data)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return c.Turn(), nil
	case keys["blocks"] != nil:
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		var t projector.Turn
		if err := dec.Decode(&t); err != nil {
			return nil, fmt.Errorf("%s: not a Turn: %v", path, err)
		}
		return &t, nil
	}
	return nil, fmt.Errorf("%s: %w", path, errNotATurn)
}

var errNotATurn = errors.New(`neither a Turn ("blocks", from turnlog export --format turn) nor a chat export ("messages", from turnlog export)`)
