package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
	"golang.org/x/term"
)

func init() { commands = append(commands, newChatCmd) }

func newChatCmd() *cobra.Command {
	var (
		nf      natsFlags
		message string
		profile string
		model   string
		timeout time.Duration
		cwd     string
		data    []string
	)
	cmd := &cobra.Command{
		Use:   "chat [conversation]",
		Short: "Chat with turnlog's workers, interactively or one message at a time",
		Long: `chat sends chat requests to turnlog.chat.<conversation> and shows the answers.

With -m TEXT it sends one request, waits for it to end, prints the answer
text to stdout and exits 0; if the request ends in request.failed it prints
the reason to stderr and exits 1.

Without -m it is interactive: type a message and see the answer stream in.
Commands: /replay (the conversation's events), /new (start a new
conversation), /quit.

A new conversation ID is made when none is given; chat prints it on stderr
(stdout stays the answer) so that you can continue it, replay it or verify
it:

  turnlog chat -m "hello"                 # stderr: conversation 01J...
  turnlog chat -m "and then?" 01J...
  turnlog replay --verify 01J...

--cwd and --data are sent as the request's data, which the workers record
as data.set and the profile's middlewares read: "cwd" is the working
directory of the template variables (prompt:cwd, git:, file:AGENTS.md).
  turnlog chat --cwd . --data timezone=Europe/Paris -m "what is here?"`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			conv := ulid.Make().String()
			if len(args) == 1 {
				conv = args[0]
			}
			if err := events.ValidateConversationID(conv); err != nil {
				return err
			}
			reqData, err := requestData(cwd, data)
			if err != nil {
				return err
			}
			if len(args) == 0 && message != "" {
				// Interactive mode shows the ID in its first line.
				fmt.Fprintf(cmd.ErrOrStderr(), "conversation %s\n", conv)
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			c := &chatClient{nc: nc, log: l, profile: profile, model: model, data: reqData, timeout: timeout, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr()}
			if message != "" {
				res, err := c.ask(ctx, conv, message, nil)
				if errors.Is(err, worker.ErrFailed) {
					return &exitError{code: 1, err: fmt.Errorf("request failed: %s", res.Failed)}
				}
				if err != nil {
					return err
				}
				fmt.Fprintln(c.out, res.Answer)
				return nil
			}
			return c.interactive(ctx, conv, cmd.InOrStdin())
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().StringVarP(&message, "message", "m", "", "send one message, print the answer, exit")
	cmd.Flags().StringVar(&profile, "profile", "", "profile to answer with (default: the workers' default)")
	cmd.Flags().StringVar(&model, "model", "", "model to ask for (default: the profile's)")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for an answer")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory sent as the request's \"cwd\" data (made absolute), read by the template variables")
	cmd.Flags().StringArrayVar(&data, "data", nil, "KEY=VALUE sent as request data (repeatable)")
	return cmd
}

type chatClient struct {
	nc          *nats.Conn
	log         *eventlog.Log
	profile     string
	model       string
	data        map[string]string
	timeout     time.Duration
	out, errOut io.Writer
}

// ask sends one request and waits for its end; onDelta, when set, receives
// the answer's text as it streams.
func (c *chatClient) ask(ctx context.Context, conv, text string, onDelta func(worker.Delta)) (worker.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	last, err := c.log.LastSeq(ctx, conv)
	if err != nil {
		return worker.Result{}, err
	}
	req := worker.Request{Conversation: conv, RequestID: ulid.Make().String(), Text: text, Profile: c.profile, Model: c.model, Data: c.data}
	if onDelta != nil {
		sub, err := c.nc.Subscribe(c.log.Names().DeltaSubject(conv), func(m *nats.Msg) {
			var d worker.Delta
			if json.Unmarshal(m.Data, &d) == nil && d.RequestID == req.RequestID {
				onDelta(d)
			}
		})
		if err != nil {
			return worker.Result{}, err
		}
		defer sub.Unsubscribe()
	}
	if _, err := worker.Send(ctx, c.log, req); err != nil {
		return worker.Result{}, err
	}
	res, err := worker.Await(ctx, c.log, conv, req.RequestID, last, 0)
	if errors.Is(err, context.DeadlineExceeded) {
		return res, fmt.Errorf("no answer after %s: is a worker running (turnlog serve, or turnlog worker)?", c.timeout)
	}
	return res, err
}

func (c *chatClient) interactive(ctx context.Context, conv string, in io.Reader) error {
	readLine, write, restore, err := lineReader(in, c.out)
	if err != nil {
		return err
	}
	defer restore()
	fmt.Fprintf(write, "conversation %s (/replay, /new, /quit)\n", conv)
	for {
		line, err := readLine()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		line = strings.TrimSpace(line)
		switch {
		case line == "":
			continue
		case line == "/quit" || line == "/exit":
			return nil
		case line == "/new":
			conv = ulid.Make().String()
			fmt.Fprintf(write, "conversation %s\n", conv)
			continue
		case line == "/replay":
			for rec, err := range c.log.Events(ctx, conv) {
				if err != nil {
					fmt.Fprintln(write, "error:", err)
					break
				}
				fmt.Fprintf(write, "%4d  %s  %-22s %-20s %s\n", rec.Pos, rec.Time.Format("15:04:05"), rec.Type, rec.Actor, replay.Summary(rec.Event))
			}
			continue
		case strings.HasPrefix(line, "/"):
			fmt.Fprintln(write, "commands: /replay, /new, /quit")
			continue
		}
		streamed := false
		res, err := c.ask(ctx, conv, line, func(d worker.Delta) {
			if d.Kind == events.KindLLMText {
				streamed = true
				fmt.Fprint(write, d.Text)
			}
		})
		if streamed {
			fmt.Fprintln(write)
		}
		switch {
		case errors.Is(err, worker.ErrFailed):
			fmt.Fprintln(write, "request failed:", res.Failed)
		case err != nil:
			fmt.Fprintln(write, "error:", err)
		case !streamed:
			fmt.Fprintln(write, res.Answer)
		}
	}
}

// requestData builds a request's data from --data KEY=VALUE pairs and
// --cwd, which wins over a "cwd" pair and is made absolute (a worker's
// working directory is not the sender's).
func requestData(cwd string, pairs []string) (map[string]string, error) {
	if cwd == "" && len(pairs) == 0 {
		return nil, nil
	}
	data := make(map[string]string, len(pairs)+1)
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--data %q: use KEY=VALUE, e.g. --data timezone=Europe/Paris", p)
		}
		if _, dup := data[k]; dup {
			return nil, fmt.Errorf("--data %q: key %q given twice", p, k)
		}
		data[k] = v
	}
	if cwd != "" {
		abs, err := filepath.Abs(cwd)
		if err != nil {
			return nil, fmt.Errorf("--cwd %q: %w", cwd, err)
		}
		st, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("--cwd %q: %w", cwd, err)
		}
		if !st.IsDir() {
			return nil, fmt.Errorf("--cwd %q is not a directory", cwd)
		}
		data["cwd"] = abs
	}
	return data, nil
}

// lineReader gives line editing and history on a terminal (x/term) and
// plain line reading otherwise.
func lineReader(in io.Reader, out io.Writer) (read func() (string, error), w io.Writer, restore func(), err error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		state, err := term.MakeRaw(int(f.Fd()))
		if err != nil {
			return nil, nil, nil, err
		}
		t := term.NewTerminal(struct {
			io.Reader
			io.Writer
		}{f, out}, "> ")
		return t.ReadLine, t, func() { _ = term.Restore(int(f.Fd()), state) }, nil
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return func() (string, error) {
		if !sc.Scan() {
			if sc.Err() != nil {
				return "", sc.Err()
			}
			return "", io.EOF
		}
		return sc.Text(), nil
	}, out, func() {}, nil
}
