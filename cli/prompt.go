package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/operator"
	"github.com/turnlog/turnlog/replay"
)

func init() { commands = append(commands, newPromptCmd) }

func newPromptCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prompt",
		Short: "Show, set, lock or unlock one conversation's system prompt",
		Long: `prompt acts on the system prompt of one conversation, by hand. Each change is
recorded as events by actor "operator:<name>" (--as, default your user name),
so turnlog replay shows who did what and when:

  show    the conversation's prompt: text, source, who set, replaced and
          locked it, and at which event
  set     make a text the conversation's prompt (source "operator"): the
          prompt it has is replaced in place (systemprompt.replaced, with the
          previous text and source), or, when it has none, one is inserted at
          the front (systemprompt.set); --lock locks it in the same step
  lock    freeze the prompt (systemprompt.locked): no middleware replaces,
          appends to, rebuilds or splits it, nor adds a system block (the
          global prompt included) beside it
  unlock  give it back to the profile's middlewares (systemprompt.unlocked)

A prompt the profile did not write (an operator's, an import's, a fork's) is
kept by profiles with the default prompt_policy: keep; a profile with
prompt_policy: replace takes an unlocked one over at its next model call.
Lock a prompt that must stay.`,
	}
	cmd.AddCommand(newPromptShowCmd(), newPromptSetCmd(), newPromptLockCmd(true), newPromptLockCmd(false))
	return cmd
}

func newPromptShowCmd() *cobra.Command {
	var (
		nf     natsFlags
		output string
	)
	cmd := &cobra.Command{
		Use:   "show CONVERSATION",
		Short: "Print the conversation's system prompt and where it came from",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			nc, l, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer nc.Close()
			v, err := operator.Show(cmd.Context(), l, args[0])
			if errors.Is(err, replay.ErrNoEvents) {
				return fmt.Errorf("prompt show %s: %w; turnlog ls lists the conversations", args[0], replay.ErrNoEvents)
			}
			if err != nil {
				return fmt.Errorf("prompt show %s: %w", args[0], err)
			}
			return write(cmd.OutOrStdout(), asJSON, v, func(w io.Writer) error { return replay.WritePrompt(w, v.SystemPrompt) })
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	return cmd
}

// operatorFlags are the flags of the commands that record an operator's
// action.
type operatorFlags struct {
	as     string
	reason string
	output string
}

func (f *operatorFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.as, "as", defaultOperator(), `who acts: the actor is "operator:<name>" (letters, digits, '.', '_', '-', '@')`)
	cmd.Flags().StringVar(&f.reason, "reason", "", "why, recorded in the event")
	cmd.Flags().StringVarP(&f.output, "output", "o", "text", "output format: text or json")
}

// defaultOperator is the name of the user running the command.
func defaultOperator() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		if _, err := operator.Actor(u.Username); err == nil {
			return u.Username
		}
	}
	return "cli"
}

// report prints what an action did.
func (f *operatorFlags) report(w io.Writer, what string, res *operator.Result) error {
	asJSON, err := outputJSON(f.output)
	if err != nil {
		return err
	}
	return write(w, asJSON, res, func(w io.Writer) error {
		if !res.Changed {
			_, err := fmt.Fprintf(w, "%s: unchanged (%s)\n", res.Conversation, res.Note)
			return err
		}
		_, err := fmt.Fprintf(w, "%s: prompt %s %s (%v, event %d)\n", res.Conversation, res.BlockID, what, res.Events, res.At)
		return err
	})
}

func newPromptSetCmd() *cobra.Command {
	var (
		nf         natsFlags
		of         operatorFlags
		text, file string
		lock       bool
	)
	cmd := &cobra.Command{
		Use:   "set CONVERSATION (--text TEXT | --file FILE)",
		Short: "Make a text the conversation's system prompt (source operator); --lock locks it too",
		Long: `set makes a text the conversation's system prompt, with source "operator".
The prompt the conversation has is replaced in place (the event keeps the
previous text and source); a conversation without one (or without any event
yet) gets one at the front. A locked prompt is refused: unlock it first.
--file - reads standard input.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (text == "") == (file == "") {
				return errors.New("set: give the prompt with --text or --file (one of them)")
			}
			if file != "" {
				b, err := readPromptInput(cmd, file)
				if err != nil {
					return err
				}
				text = string(b)
			}
			actor, err := operator.Actor(of.as)
			if err != nil {
				return fmt.Errorf("--as: %w", err)
			}
			nc, l, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer nc.Close()
			res, err := operator.SetPrompt(cmd.Context(), l, args[0], text, actor, operator.SetOptions{Lock: lock, Reason: of.reason})
			if err != nil {
				return err
			}
			what := "set"
			if lock {
				what = "set and locked"
			}
			return of.report(cmd.OutOrStdout(), what, res)
		},
	}
	nf.register(cmd.Flags())
	of.register(cmd)
	cmd.Flags().StringVar(&text, "text", "", "the prompt")
	cmd.Flags().StringVar(&file, "file", "", "read the prompt from a file ('-' for standard input)")
	cmd.Flags().BoolVar(&lock, "lock", false, "lock the prompt in the same step")
	return cmd
}

func newPromptLockCmd(lock bool) *cobra.Command {
	var (
		nf natsFlags
		of operatorFlags
	)
	cmd := &cobra.Command{
		Use:   "lock CONVERSATION",
		Short: "Lock the conversation's system prompt: no middleware changes it or adds a system block beside it",
		Long: `lock freezes the conversation's system prompt from its next model call on:
no middleware (systemprompt, systemprompt_append, template and its rebuild on
compaction, globalprompt, roles) replaces, changes or splits it, nor adds a
system block beside it, whatever the profile's prompt_policy. The lock is
recorded (systemprompt.locked) with you as its holder. Locking a locked
prompt changes nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			actor, err := operator.Actor(of.as)
			if err != nil {
				return fmt.Errorf("--as: %w", err)
			}
			nc, l, err := nf.connect(cmd.Context())
			if err != nil {
				return err
			}
			defer nc.Close()
			act, what := operator.LockPrompt, "locked"
			if !lock {
				act, what = operator.UnlockPrompt, "unlocked"
			}
			res, err := act(cmd.Context(), l, args[0], actor, of.reason)
			if err != nil {
				return err
			}
			return of.report(cmd.OutOrStdout(), what, res)
		},
	}
	if !lock {
		cmd.Use = "unlock CONVERSATION"
		cmd.Short = "Unlock the conversation's system prompt: the profile's middlewares manage it again"
		cmd.Long = `unlock lifts the lock of the conversation's system prompt
(systemprompt.unlocked): from its next model call, the profile's middlewares
manage it again (a profile with prompt_policy: replace then replaces a prompt
it did not write). Unlocking a prompt that is not locked changes nothing.`
	}
	nf.register(cmd.Flags())
	of.register(cmd)
	return cmd
}

// readPromptInput reads a file, or standard input for "-", refusing more
// than a prompt may hold.
func readPromptInput(cmd *cobra.Command, name string) ([]byte, error) {
	var r io.Reader = cmd.InOrStdin()
	if name != "-" {
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("read the prompt: %w", err)
		}
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(io.LimitReader(r, operator.MaxPromptBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read the prompt: %w", err)
	}
	return b, nil
}
