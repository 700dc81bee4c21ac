package cli

import (
	"bufio"
	"context"
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
	"github.com/turnlog/turnlog/chatclient"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/tracing"
	"github.com/turnlog/turnlog/worker"
	"golang.org/x/term"
)

func init() { commands = append(commands, newChatCmd) }

func newChatCmd() *cobra.Command {
	var (
		nf        natsFlags
		message   string
		profile   string
		model     string
		requestID string
		timeout   time.Duration
		cwd       string
		data      []string
	)
	cmd := &cobra.Command{
		Use:   "chat [conversation]",
		Short: "Chat with turnlog's workers, interactively or one message at a time",
		Long: `chat sends chat requests to turnlog.chat.<conversation> and shows the answers.

With -m TEXT it sends one request, waits for it to end, prints the answer
text to stdout and exits 0; if the request ends in request.failed it prints
the reason to stderr and exits 1, as it does, sending nothing, when
--request-id is the ID of a request sent to another conversation. If no answer comes within --timeout it
exits 3 and prints the request's ID: the request may still be answered, and
` + "`turnlog chat --request-id ID -m TEXT CONVERSATION`" + ` waits for it again.

--request-id ULID sends the request under that ID. A request that the log
already holds is not sent again (its answer is printed, or awaited), and
JetStream drops a second copy sent within the requests stream's duplicate
window (2 minutes), so retrying with the same ID never asks twice.

chat rides through the faults of a cluster: it touches only the streams it
needs, retries while JetStream is unavailable (an election, a node cut off)
within --timeout, moves to another of the --nats-url servers when the one it
uses stays unavailable, and reads the log for the outcome when its watch of
the conversation is lost.

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
			if requestID != "" {
				if message == "" {
					return errors.New("--request-id goes with -m: the message is sent again under that ID if the log does not hold it yet")
				}
				if _, err := ulid.ParseStrict(requestID); err != nil {
					return fmt.Errorf("--request-id %q is not a ULID (26 characters of Crockford base32, as chat prints them)", requestID)
				}
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
			// A chat is the root of its trace (or a child of the one
			// TRACEPARENT names): the worker continues it.
			stopTracing, err := startTracing(ctx, "turnlog-chat", false, io.Discard)
			if err != nil {
				return err
			}
			defer stopTracing()
			ctx, span := tracing.StartClient(ctx, "turnlog chat", conv)
			defer span.End(nil)
			// Reconnect for as long as the command runs, to any of the
			// servers given: chatclient moves the connection on when the
			// server in use stays unavailable.
			nc, err := nf.dialFor(ctx, nats.MaxReconnects(-1), nats.ReconnectWait(250*time.Millisecond))
			if err != nil {
				return err
			}
			defer nc.Close()
			l, err := eventlog.Attach(nc, eventlog.WithPrefix(nf.prefix))
			if err != nil {
				return err
			}
			c := &chatClient{asker: chatclient.New(nc, l), log: l, profile: profile, model: model, data: reqData, timeout: timeout, out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr()}
			if message != "" {
				res, err := c.ask(ctx, conv, message, requestID, nil)
				var noAnswer *chatclient.NoAnswerError
				switch {
				case errors.Is(err, worker.ErrFailed):
					return &exitError{code: 1, err: fmt.Errorf("request failed: %s", res.Failed)}
				case errors.Is(err, eventlog.ErrCauseReused):
					// --request-id names another conversation's request:
					// nothing was sent.
					return &exitError{code: 1, err: err}
				case errors.As(err, &noAnswer):
					return &exitError{code: 3, err: noAnswerHelp(noAnswer, message)}
				case err != nil:
					return err
				}
				fmt.Fprintln(c.out, res.Answer)
				return nil
			}
			return c.interactive(ctx, conv, cmd.InOrStdin())
		},
	}
	// chat's --data is the request's data (issue 17), so the data
	// directory whose admin key chat uses comes from TURNLOG_DATA.
	nf.noDataFlag = true
	nf.register(cmd.Flags())
	cmd.Flags().StringVarP(&message, "message", "m", "", "send one message, print the answer, exit")
	cmd.Flags().StringVar(&profile, "profile", "", "profile to answer with (default: the workers' default)")
	cmd.Flags().StringVar(&model, "model", "", "model to ask for (default: the profile's)")
	cmd.Flags().StringVar(&requestID, "request-id", "", "send -m under this request ID (a ULID), never twice: to wait again for a request that timed out")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for an answer")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory sent as the request's \"cwd\" data (made absolute), read by the template variables")
	cmd.Flags().StringArrayVar(&data, "data", nil, "KEY=VALUE sent as request data (repeatable)")
	return cmd
}

// noAnswerHelp says, in one line, that the outcome is unknown and how to
// learn it without asking twice.
func noAnswerHelp(e *chatclient.NoAnswerError, message string) error {
	return fmt.Errorf("%w; it may still be answered: see with `turnlog replay %s`, or wait again without sending it twice: `turnlog chat --request-id %s -m %s %s`",
		e, e.Conversation, e.RequestID, shellQuote(message), e.Conversation)
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type chatClient struct {
	asker       *chatclient.Client
	log         *eventlog.Log
	profile     string
	model       string
	data        map[string]string
	timeout     time.Duration
	out, errOut io.Writer
}

// ask sends one request (under requestID when it is set) and waits for its
// end; onDelta, when set, receives the answer's text as it streams.
func (c *chatClient) ask(ctx context.Context, conv, text, requestID string, onDelta func(worker.Delta)) (worker.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req := worker.Request{Conversation: conv, RequestID: requestID, Text: text, Profile: c.profile, Model: c.model, Data: c.data}
	return c.asker.Ask(ctx, req, onDelta)
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
		res, err := c.ask(ctx, conv, line, "", func(d worker.Delta) {
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
