package cli

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/engine/wire"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/templates"
	"golang.org/x/term"
)

func init() { commands = append(commands, newReplayCmd) }

func newReplayCmd() *cobra.Command {
	var (
		nf          natsFlags
		at          int
		inference   int
		wireFlag    bool
		verify      bool
		checkRules  bool
		rerun       bool
		output      string
		profiles    string
		profileName string
	)
	cmd := &cobra.Command{
		Use:   "replay <conversation>",
		Short: "Show, prove or re-run a conversation from its events",
		Long: `replay re-projects a conversation from its events (never from a snapshot).

Without flags it prints the timeline: one line per event (n, stream
sequence, time, type, actor, the role that stored it ("by": admin or
worker, "-" for a step stored before roles were recorded), cause:step,
summary) and, at every
inference.started, the Turn the model received, block by block with kinds,
sections and trust, and the system prompt that was active: its text, where
it came from (systemprompt.source, template hash and variables), when it
was set, last replaced and locked (by event n).

  --at N          the Turn after the conversation's N-th event (0: empty)
  --inference N   the N-th model call only, with what became of each block
                  in the request its engine sent (not sent, merged, moved)
  --inference N --wire
                  the request body the N-th model call sent, byte for byte,
                  rendered again from the log by the call's engine; exit 1,
                  naming the call and both hashes, when it does not hash to
                  what the call recorded (see docs/wire.md). An app's call
                  through the recording gateway is printed as canonical JSON
                  (RFC 8785), checked against the call's input hash: the
                  log keeps the SHA-256 of the app's own bytes (its layout),
                  not the bytes, and a note on stderr says so
  --verify        re-project every recorded model input and compare its
                  hash (and the system prompt's) with what inference.started
                  recorded, render every recorded wire request again and
                  compare its hash, and check that every operator action (an
                  operator:* actor, an import, a fork, a repair) was stored
                  by the admin's credential; read from the events stream
                  only. Exit 1 naming each mismatch by event n, seq and
                  field (input_hash, wire_sha256, writer, ...), 0 when all
                  match. A conversation without model calls is not
                  "verified": it says who stored its steps and when. See
                  docs/roles.md
  --check         apply the rules of docs/auditing-check.md to every model
                  input (duplicate_system_prompt, duplicate_blocks,
                  reasoning_without_follower, reasoning_altered,
                  tool_call_without_result, tool_result_without_call,
                  history_rewritten, system_prompt_changed,
                  role_marker_in_untrusted_text); exit 1 with
                  the findings, each at the model call that received it,
                  0 when there is none
  --rerun         run the recorded requests again through today's
                  middleware chain (--profiles, --profile), with the
                  model's recorded outputs and tool results replayed
                  instead of calling a model or a tool (so the profile's
                  provider need not be in this binary; a note says when
                  it is not); each request re-runs with the profile
                  that served it, as its outcome records (requests
                  recorded without one: --profile's), unless --profile
                  is given, which re-runs every request with that one;
                  exit 1 at the first difference from the log, 0 when
                  there is none

-o json prints one JSON document (see docs/auditing.md, "JSON output", for
the schemas). On a terminal, long reads show progress on stderr.

Exit codes: 0 ok, 1 --verify mismatch, --check finding or --rerun
difference, 2 error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv := args[0]
			asJSON, err := outputJSON(output)
			if err != nil {
				return err
			}
			// --rerun's profile is read first: a binary that lacks one of
			// its middlewares says so before connecting. Its engine may be
			// absent (ChainOnly): the re-run replays the model's outputs,
			// and its result notes the engine's absence.
			var rerunProfile profile.Profile
			var rerunSet profile.Set
			if rerun {
				set, err := profile.Load(profiles, profile.ChainOnly())
				if err != nil {
					return err
				}
				p, ok := set[profileName]
				if !ok {
					return fmt.Errorf("--profile %q: the profiles are %v; pick one (or pass --profiles FILE)", profileName, set.Names())
				}
				rerunProfile = p
				if !cmd.Flags().Changed("profile") {
					rerunSet = set
				}
			}
			ctx := cmd.Context()
			logOpts := []eventlog.Option{eventlog.ReadOnly()}
			if verify {
				// Who stored each step is proved by the stream, never
				// by the history cache, which the workers write.
				logOpts = append(logOpts, eventlog.FromStreamOnly())
			}
			nc, l, err := nf.connect(ctx, logOpts...)
			if err != nil {
				return err
			}
			defer nc.Close()
			prog := newProgress(cmd.ErrOrStderr(), "replay "+conv)
			defer prog.done()
			opts := []replay.Option{replay.WithProgress(prog.update)}
			out := cmd.OutOrStdout()
			switch {
			case wireFlag && !cmd.Flags().Changed("inference"):
				return fmt.Errorf("--wire prints one model call's request: give the call with --inference N")
			case verify:
				v, err := replay.Verify(ctx, l, conv, append(opts, replay.WithWire(wire.New(nil)))...)
				if err != nil {
					return err
				}
				prog.done()
				if err := write(out, asJSON, v, v.WriteText); err != nil {
					return err
				}
				if !v.OK() {
					return &exitError{code: 1, err: fmt.Errorf("verify %s: %s; the log does not prove what it records", conv, plural.Count(len(v.Mismatches), "mismatch"))}
				}
				return nil
			case checkRules:
				c, err := replay.Check(ctx, l, conv, append(opts, replay.WithWire(wire.New(nil)))...)
				if err != nil {
					return err
				}
				prog.done()
				if err := write(out, asJSON, c, c.WriteText); err != nil {
					return err
				}
				if !c.OK() {
					return &exitError{code: 1, err: fmt.Errorf("check %s: %s in %s", conv, plural.Count(len(c.Findings), "finding"), plural.Count(c.Calls, "model call"))}
				}
				return nil
			case rerun:
				p := rerunProfile
				if p.Templates == nil {
					p.Templates = templates.New(l) // as the workers do
				}
				rerunOpts := opts
				if rerunSet != nil {
					// Each request re-runs with the profile that
					// served it, from the same file.
					served := profile.Set{}
					for name, q := range rerunSet {
						if q.Templates == nil {
							q.Templates = templates.New(l)
						}
						served[name] = q
					}
					rerunOpts = append(rerunOpts[:len(rerunOpts):len(rerunOpts)], replay.WithRequestProfiles(served, profileName))
				}
				res, err := replay.Rerun(ctx, l, conv, p, rerunOpts...)
				if err != nil {
					return err
				}
				if profiles == "" && !res.OK() {
					// A binary of one's own re-running its workers'
					// conversations without their profiles file runs
					// turnlog's chain, not theirs.
					res.Notes = append(res.Notes, fmt.Sprintf("no --profiles given (nor TURNLOG_PROFILES): this re-ran the built-in profile %q; "+
						"to re-run the chain the workers ran, pass the profiles file they were started with (serve --profiles FILE)", profileName))
				}
				prog.done()
				if err := write(out, asJSON, res, res.WriteText); err != nil {
					return err
				}
				if !res.OK() {
					d := res.Difference
					return &exitError{code: 1, err: fmt.Errorf("rerun %s: differs from the log at event %d (seq %d)", conv, d.N, d.Seq)}
				}
				return nil
			case cmd.Flags().Changed("at"):
				pt, err := replay.At(ctx, l, conv, at, opts...)
				if err != nil {
					return err
				}
				prog.done()
				return write(out, asJSON, pt, pt.WriteText)
			case cmd.Flags().Changed("inference"):
				if inference < 1 {
					return fmt.Errorf("--inference %d: model calls count from 1", inference)
				}
				calls := 0
				for e, err := range replay.Entries(ctx, l, conv, append(opts, replay.WithTurns(func(i int) bool { return i == inference }))...) {
					if err != nil {
						return err
					}
					if e.Inference == nil {
						continue
					}
					if calls = e.Inference.Index; calls == inference {
						prog.done()
						if wireFlag {
							if asJSON {
								return fmt.Errorf("--wire prints the request body itself; leave out -o json")
							}
							return printWire(ctx, out, cmd.ErrOrStderr(), conv, e)
						}
						noteWire(ctx, e.Inference)
						return write(out, asJSON, inferenceDoc{Conversation: conv, Entry: e}, e.WriteText)
					}
				}
				return fmt.Errorf("--inference %d: %s has %s", inference, conv, plural.Count(calls, "model call"))
			default:
				// Streamed: a long conversation's Turns are never all in
				// memory. Its output shows the progress on a terminal.
				if isTerminal(out) {
					prog = nil
				}
				entries := replay.Entries(ctx, l, conv, replay.WithProgress(prog.update))
				if asJSON {
					return replay.WriteTimelineJSON(out, conv, entries)
				}
				return replay.WriteTimeline(out, conv, entries)
			}
		},
	}
	fs := cmd.Flags()
	nf.register(fs)
	fs.IntVar(&at, "at", 0, "show the Turn after the conversation's n-th event (counting from 1)")
	fs.IntVar(&inference, "inference", 0, "show the N-th model call only (counting from 1)")
	fs.BoolVar(&wireFlag, "wire", false, "with --inference N: print the request body the call sent, rendered again from the log; exit 1 when it does not hash to what was recorded (a gateway call's: as canonical JSON, against its input hash)")
	fs.BoolVar(&verify, "verify", false, "re-project every recorded model input and check its hash, and the wire request's; exit 1 on a mismatch")
	fs.BoolVar(&checkRules, "check", false, "check every model input against the rules of docs/auditing-check.md; exit 1 with findings")
	fs.BoolVar(&rerun, "rerun", false, "re-run the requests through today's middleware chain with the recorded model outputs; exit 1 at a difference")
	fs.StringVarP(&output, "output", "o", "text", "output format: text or json")
	fs.StringVar(&profiles, "profiles", os.Getenv("TURNLOG_PROFILES"), "profiles YAML file for --rerun (env TURNLOG_PROFILES); default: the built-in profiles")
	fs.StringVar(&profileName, "profile", profile.DefaultName, "re-run every request with this profile (default: each request with the profile that served it; this one for requests recorded without one)")
	cmd.MarkFlagsMutuallyExclusive("at", "inference", "verify", "check", "rerun")
	return cmd
}

// inferenceDoc is the JSON of `replay --inference N`.
type inferenceDoc struct {
	Conversation string        `json:"conversation"`
	Entry        *replay.Entry `json:"event"`
}

// outputJSON parses -o.
func outputJSON(format string) (bool, error) {
	switch format {
	case "text", "":
		return false, nil
	case "json":
		return true, nil
	}
	return false, fmt.Errorf("-o %q: use text or json", format)
}

// write prints v as indented JSON, or as text with writeText.
func write(w io.Writer, asJSON bool, v any, writeText func(io.Writer) error) error {
	if !asJSON {
		return writeText(w)
	}
	return printJSON(w, v)
}

// isTerminal reports whether w is a terminal; a variable so tests can
// pretend.
var isTerminal = func(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// progress shows how many events a long read has gone through, on a
// terminal only, and only once the read has taken longer than a moment.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	label string
	start time.Time
	last  time.Time
	shown bool
}

// newProgress returns nil (which does nothing) unless w is a terminal.
func newProgress(w io.Writer, label string) *progress {
	if !isTerminal(w) {
		return nil
	}
	return &progress{w: w, label: label, start: time.Now()}
}

func (p *progress) update(events int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.start) < 300*time.Millisecond || now.Sub(p.last) < 100*time.Millisecond {
		return
	}
	p.last, p.shown = now, true
	fmt.Fprintf(p.w, "\r\x1b[K%s: %d events read (%s)", p.label, events, now.Sub(p.start).Round(100*time.Millisecond))
}

// done clears the progress line, so output that follows starts clean.
func (p *progress) done() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.shown {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.shown = false
	}
	p.start = time.Now().Add(time.Hour) // nothing more after done
}
