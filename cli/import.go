package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newImportCmd) }

func newImportCmd() *cobra.Command {
	var (
		nf      natsFlags
		output  string
		callsIn string
		maxBody = byteSize(gateway.DefaultMaxBody)
	)
	cmd := &cobra.Command{
		Use:   "import <file>... | import --calls FILE",
		Short: "Turn OpenAI chat messages JSON files, or a log of model calls, into conversations",
		Long: `import reads chat files in the shape turnlog export writes
({"id", "model", "messages", "created_at", "updated_at", "metadata"}) and
records each as a conversation: conversation.started (metadata as data)
and one event per block, by actor "import", all in one message, so a file
lands whole or not at all. The conversation ID is the file's "id" (or
"chat-" and a hash of the content when it has none). A file "-" reads
standard input (once; messages call it <stdin>), as in
turnlog export demo | turnlog import -.

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
is refused.

--calls FILE reads a log of model calls instead, one JSON object a line,
what request/response logs of other gateways and SDK hooks hold ("-" reads
standard input: ... | turnlog import --calls -):

  {"api": "chat.completions"|"responses"|"messages", "time": RFC 3339,
   "conversation": optional, "request": {...}, "response": {...}}

("response" may be a stream's server-sent events as one string). Each call
is recorded as the recording gateway records a live one (docs/gateway.md):
at its logged time, in time order, threaded the same way (a named
conversation, previous_response_id, or by content through the installation's
threading index, so later calls through the gateway continue them) and
checked the same way. Every line is checked first: a line that is not a
call, or whose request or response is not of its API's shape, is reported
with its number, and then nothing is recorded. Importing a file again
records only the calls not imported before (a call's ID is derived from its
line's content, and the threading index notes each call imported); the
others are listed as unchanged. A call larger than one NATS message can
hold is recorded as the gateway records it, by its hash alone (or, for an
answer too large, as failed), and its line says so.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if callsIn != "" {
				if len(args) > 0 {
					return fmt.Errorf("import --calls reads one file of calls; give the chat files in another run")
				}
				return nil
			}
			return cobra.MinimumNArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			if callsIn != "" {
				return importCalls(cmd, &nf, callsIn, int(maxBody), asJSON)
			}
			if i := slices.Index(args, "-"); i >= 0 && slices.Contains(args[i+1:], "-") {
				return errors.New(`import: "-" (standard input) can be read only once; name it once`)
			}
			now := time.Now()
			var plans []*replay.ImportPlan
			var bad []error
			for _, path := range args {
				data, err := readImportFile(cmd, path)
				path = importName(path)
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
	cmd.Flags().StringVar(&callsIn, "calls", "", "import a JSON-lines `FILE` of logged model calls (api, time, conversation, request, response) as the recording gateway records them; - reads standard input")
	cmd.Flags().Var(&maxBody, "max-body", "longest line --calls reads (e.g. 32MiB)")
	return cmd
}

// readImportFile reads a file import was given, or standard input for "-".
func readImportFile(cmd *cobra.Command, path string) ([]byte, error) {
	if path != "-" {
		return os.ReadFile(path)
	}
	b, err := io.ReadAll(cmd.InOrStdin())
	if err != nil {
		return nil, fmt.Errorf("read standard input: %w", err)
	}
	return b, nil
}

// importName is how import's messages name a file: its path, or <stdin>
// for "-".
func importName(path string) string {
	if path == "-" {
		return "<stdin>"
	}
	return path
}

// importCalls is import --calls: every line checked, then each call
// recorded through the gateway's recorder. path "-" is standard input.
func importCalls(cmd *cobra.Command, nf *natsFlags, path string, maxLine int, asJSON bool) error {
	in := cmd.InOrStdin()
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("import --calls: %w", err)
		}
		defer f.Close()
		in = f
	}
	path = importName(path)
	lines, err := gateway.ReadCalls(in, maxLine)
	if err != nil {
		return fmt.Errorf("import --calls %s: nothing imported; fix these lines and run again:\n%w", path, err)
	}
	if len(lines) == 0 {
		return fmt.Errorf("import --calls %s: the file holds no calls", path)
	}
	ctx := cmd.Context()
	nc, l, err := nf.connect(ctx)
	if err != nil {
		return err
	}
	defer nc.Close()
	threads, err := l.Threads(ctx)
	if err != nil {
		return err
	}
	rec, err := gateway.NewRecorder(gateway.Config{Log: l, Threads: threads})
	if err != nil {
		return err
	}
	res, err := rec.Import(ctx, lines)
	if err != nil {
		err = fmt.Errorf("import --calls %s: %w (the calls listed before it are recorded)", path, err)
	}
	if werr := write(cmd.OutOrStdout(), asJSON, res, func(w io.Writer) error {
		for _, r := range res {
			if r.Status == gateway.StatusUnchanged {
				fmt.Fprintf(w, "%s:%d: unchanged: this call was imported before, into %s\n", path, r.Line, r.Conversation)
				continue
			}
			if r.Lacks != "" {
				fmt.Fprintf(w, "%s:%d: recorded in %s (%s) %s\n", path, r.Line, r.Conversation, r.Threading, r.Lacks)
				continue
			}
			fmt.Fprintf(w, "%s:%d: recorded in %s (%s)\n", path, r.Line, r.Conversation, r.Threading)
		}
		return nil
	}); werr != nil && err == nil {
		err = werr
	}
	return err
}
