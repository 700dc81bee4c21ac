package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/middlewares"
	"github.com/turnlog/turnlog/middlewares/template"
	"github.com/turnlog/turnlog/natsauth"
	"github.com/turnlog/turnlog/natsconn"
	"github.com/turnlog/turnlog/projector"
	"github.com/turnlog/turnlog/templates"
)

func init() { commands = append(commands, newTemplateCmd) }

func newTemplateCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "template",
		Short: "Read, set, list the variables of and preview the global system prompt template",
		Long: `template manages the global system prompt template, kept in the
TURNLOG_TEMPLATES bucket. Each conversation's prompt is rendered from it once,
on its first turn, and reused byte for byte afterwards (so the provider's
prompt cache keeps working); it is rendered again, with fresh values, only
when the conversation is compacted. A new template prompts the conversations
started afterwards; conversations already started keep their prompt byte for
byte until their next compaction, which renders the template as it is then
(unless their profile says compaction_template: original).

Language: [type:name] inserts a variable (empty when it does not exist);
[if type:name]...[else]...[endif] and [if !type:name]...[endif] test one.
An empty template means no system prompt at all. See the variables with
turnlog template variables.

Without a template set, the built-in default is used:

` + templates.Default,
	}
	cmd.AddCommand(newTemplateGetCmd(), newTemplateSetCmd(), newTemplateVariablesCmd(), newTemplateRenderCmd())
	return cmd
}

func newTemplateGetCmd() *cobra.Command {
	var nf natsFlags
	cmd := &cobra.Command{
		Use:   "get",
		Short: "Print the global template exactly as stored (the built-in default when none is set)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			nc, l, err := nf.connect(cmd.Context(), eventlog.ReadOnly())
			if err != nil {
				return err
			}
			defer nc.Close()
			g, err := templates.New(l).Global(cmd.Context())
			if err != nil {
				return err
			}
			if g.Default {
				fmt.Fprintln(cmd.ErrOrStderr(), "turnlog: no template set; this is the built-in default")
			}
			_, err = io.WriteString(cmd.OutOrStdout(), g.Text)
			return err
		},
	}
	nf.register(cmd.Flags())
	return cmd
}

func newTemplateSetCmd() *cobra.Command {
	var (
		nf     natsFlags
		reset  bool
		strict bool
	)
	cmd := &cobra.Command{
		Use:   "set <file>",
		Short: "Make a file the global template ('-' reads standard input; --default goes back to the built-in one)",
		Long: `set stores the file's content as the global template. Conversations started
from now on are prompted with it; conversations already started keep their
prompt byte for byte until their next compaction, which renders this template
(unless their profile says compaction_template: original). An empty file
means new conversations get no system prompt at all.

Before storing, set lists on stderr each suspicious construct of the
template with its line and column: a variable of an unknown type
([fiel:README.md]), an unknown name of a fixed type ([system:dat]), an
[if], [else] or [endif] without its partner, a tag not closed on its line.
They are stored all the same (unknown variables render as nothing,
unmatched tags as literal text); with --strict a template with warnings is
refused (exit 1) and nothing is stored.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if reset && len(args) > 0 {
				return errors.New("set: give either a file or --default, not both")
			}
			if !reset && len(args) != 1 {
				return errors.New("set: give the template file ('-' for standard input), or --default")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			var text []byte
			if !reset {
				var err error
				if text, err = readTemplateInput(cmd, args[0]); err != nil {
					return err
				}
				if err := templates.Validate(string(text)); err != nil {
					return fmt.Errorf("%s: %w", args[0], err)
				}
				warnings := template.Lint(string(text))
				printWarnings(cmd.ErrOrStderr(), templateName(args[0]), warnings)
				if strict && len(warnings) > 0 {
					return &exitError{code: 1, err: fmt.Errorf("template not set: %s (--strict); fix the template, or set it without --strict",
						plural.Count(len(warnings), "warning"))}
				}
			}
			nc, l, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer nc.Close()
			store := templates.New(l)
			if reset {
				if err := store.ResetGlobal(cmd.Context()); err != nil {
					return err
				}
				fmt.Fprintln(cmd.OutOrStdout(), "template reset to the built-in default; new conversations use it")
				return nil
			}
			g, err := store.SetGlobal(cmd.Context(), string(text))
			if err != nil {
				return err
			}
			what := plural.Count(len(g.Text), "byte")
			if g.Text == "" {
				what = "empty: no system prompt"
			}
			// Its sha256 names it (systemprompt events record it); the
			// bucket's revision counts every write to the bucket, not sets
			// of this template, so it is not shown.
			fmt.Fprintf(cmd.OutOrStdout(), "template set (%s, sha256 %s); new conversations use it, started ones at their next compaction\n",
				what, projector.HashText(g.Text)[:12])
			return nil
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().BoolVar(&reset, "default", false, "go back to the built-in default template")
	cmd.Flags().BoolVar(&strict, "strict", false, "refuse a template with warnings (exit 1): store nothing")
	return cmd
}

// templateName is how warnings name the template: its file, or <stdin>.
func templateName(arg string) string {
	if arg == "-" {
		return "<stdin>"
	}
	return arg
}

// printWarnings lists a template's warnings as compilers do,
// "name:line:col: message", one a line.
func printWarnings(w io.Writer, name string, warnings []template.Warning) {
	for _, x := range warnings {
		fmt.Fprintf(w, "turnlog: warning: %s:%s\n", name, x)
	}
}

func newTemplateVariablesCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "variables",
		Short: "List the variables a template can use",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			vars := template.Catalog()
			if asJSON {
				return printJSON(cmd.OutOrStdout(), map[string]any{"variables": vars})
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "VARIABLE\tDESCRIPTION")
			for _, v := range vars {
				fmt.Fprintf(w, "[%s]\t%s\n", v.Ref, v.Description)
			}
			return w.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"variables": [...]}, as the HTTP API does`)
	return cmd
}

func newTemplateRenderCmd() *cobra.Command {
	var (
		nf                  natsFlags
		cwd, file           string
		model, conversation string
		cwdRoots            []string
		asJSON              bool
	)
	cmd := &cobra.Command{
		Use:   "render",
		Short: "Show the prompt a conversation would get from the global template (or --file)",
		Long: `render resolves the template's variables on this machine, as a worker does
for a conversation's first turn, and prints the prompt. --cwd is the
conversation's working directory (for prompt:cwd, git: and file:; without
it those variables do not exist, as for a request that sends no "cwd" data).
Nothing is printed when the template means "no system prompt".

It reads only where workers may: a --cwd outside the --cwd-root
directories (env TURNLOG_CWD_ROOTS; default the directory render runs in,
as for workers) is refused (exit 1) when the template reads the working
directory (file:, git:, prompt:cwd), and nothing in the data directory's
auth/ (its keys) is ever read. The template's warnings (see template set
--help) are listed on stderr, or under "warnings" with --json.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var src string
			if file != "" {
				b, err := readTemplateInput(cmd, file)
				if err != nil {
					return err
				}
				src = string(b)
			} else {
				nc, l, err := nf.connect(cmd.Context(), eventlog.ReadOnly())
				if err != nil {
					return err
				}
				defer nc.Close()
				if src, err = templates.New(l).Template(cmd.Context()); err != nil {
					return err
				}
			}
			env := template.Env{Model: model, ConversationID: conversation}
			if cwd != "" {
				abs, err := filepath.Abs(cwd)
				if err != nil {
					return fmt.Errorf("--cwd %s: %w", cwd, err)
				}
				if info, err := os.Stat(abs); err != nil || !info.IsDir() {
					return fmt.Errorf("--cwd %s is not a directory; give the conversation's working directory", cwd)
				}
				env.Cwd = abs
				roots, err := absCwdRoots(cwdRoots)
				if err != nil {
					return err
				}
				if middlewares.ReadsCwd(template.Parse(src).Variables()) {
					// A worker would refuse this cwd: a preview must not
					// read where a conversation may not.
					if err := middlewares.CheckCwd(abs, roots); err != nil {
						return &exitError{code: 1, err: fmt.Errorf("render: %w", err)}
					}
				}
			}
			data := nf.settings.DataDir
			if data == "" {
				data = envOr("TURNLOG_DATA", natsconn.DefaultDataDir)
			}
			auth, err := filepath.Abs(natsauth.Dir(data))
			if err != nil {
				return err
			}
			env.DenyDirs = []string{auth}
			warnings := template.Lint(src)
			prompt, used, ok, err := template.RenderWith(cmd.Context(), src, env)
			if err != nil {
				return fmt.Errorf("render: %w", err)
			}
			if asJSON {
				if used == nil {
					used = template.Values{}
				}
				if warnings == nil {
					warnings = []template.Warning{}
				}
				return printJSON(cmd.OutOrStdout(), map[string]any{"prompt": prompt, "variables": used, "warnings": warnings})
			}
			name := "<stored template>"
			if file != "" {
				name = templateName(file)
			}
			printWarnings(cmd.ErrOrStderr(), name, warnings)
			if !ok {
				fmt.Fprintln(cmd.ErrOrStderr(), "turnlog: the template renders to nothing: no system prompt")
				return nil
			}
			_, err = fmt.Fprintln(cmd.OutOrStdout(), prompt)
			return err
		},
	}
	nf.register(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVar(&cwd, "cwd", "", "the conversation's working directory (e.g. . for this one)")
	fs.StringVar(&file, "file", "", "render this template file ('-' for standard input) instead of the stored one")
	fs.StringVar(&model, "model", "", "the prompt:model value")
	fs.StringVar(&conversation, "conversation", "", "the prompt:conversation_id value")
	fs.StringArrayVar(&cwdRoots, "cwd-root", filepath.SplitList(os.Getenv("TURNLOG_CWD_ROOTS")), "a directory under which --cwd may lie for file:, git: and prompt:cwd to read it, as for workers (repeatable; env TURNLOG_CWD_ROOTS; default: the directory render runs in; / allows any)")
	fs.BoolVar(&asJSON, "json", false, `print {"prompt": ..., "variables": {...}, "warnings": [...]}, as the HTTP API does`)
	return cmd
}

// readTemplateInput reads a file, or standard input for "-".
func readTemplateInput(cmd *cobra.Command, name string) ([]byte, error) {
	if name == "-" {
		b, err := io.ReadAll(io.LimitReader(cmd.InOrStdin(), templates.MaxBytes+1))
		if err != nil {
			return nil, fmt.Errorf("read standard input: %w", err)
		}
		return b, nil
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("read the template: %w", err)
	}
	return b, nil
}
