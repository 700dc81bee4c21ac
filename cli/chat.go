package cli

import (
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
	"github.com/turnlog/turnlog/tracing"
	"github.com/turnlog/turnlog/worker"
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
--request-id is the ID of a request sent to another conversation or the
conversation is an app's (the recording gateway records it: fork it to
chat), and when the conversation is erased while the request waits or a
worker keeps the request as a dead letter (nothing will answer; the
reason is printed). If no answer comes within --timeout it
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

Ctrl-C stops waiting at once; it does not cancel the request, which a
worker answers all the same. chat prints the request's ID and the command
that waits for its answer (` + "`turnlog chat --request-id ID -m TEXT CONVERSATION`" + `,
which sends it under that ID if it never reached the server), and exits 130.
When the connection to NATS is down for 2 s while a request is under way,
chat says "waiting for NATS at URL…" on stderr; the request goes out, and
its answer is read, once the server is back (within --timeout).

Without -m it is interactive: type a message and see the answer stream in,
with each tool call (name and arguments) and its result. Ctrl-C while an
answer is awaited stops waiting, names the request as above and comes back
to the prompt; Ctrl-C or Ctrl-D at the prompt leaves. Commands: /replay
(the conversation's events), /new (start a new conversation), /quit.

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
			stopTracing, err := startTracing(ctx, "turnlog-chat", false, cmd.ErrOrStderr())
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
			sigs, stopSigs := interrupts(ctx)
			defer stopSigs()
			c := &chatClient{asker: chatclient.New(nc, l), log: l, nc: nc, profile: profile, model: model, data: reqData, timeout: timeout,
				out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr(), interrupts: sigs, outageNotice: 2 * time.Second, lastURL: nc.ConnectedUrlRedacted()}
			if message != "" {
				res, err := c.ask(ctx, conv, message, requestID, nil, nil)
				var noAnswer *chatclient.NoAnswerError
				var interrupted *interruptedError
				switch {
				case errors.As(err, &interrupted):
					return &exitError{code: 130, err: interrupted}
				case errors.Is(err, worker.ErrFailed):
					return &exitError{code: 1, err: fmt.Errorf("request failed: %s", terminalText(res.Failed))}
				case errors.Is(err, chatclient.ErrErased), errors.Is(err, chatclient.ErrDeadLettered):
					return &exitError{code: 1, err: err}
				case errors.Is(err, eventlog.ErrCauseReused), errors.Is(err, worker.ErrAppsConversation):
					// --request-id names another conversation's request,
					// or the conversation is an app's: nothing was sent.
					return &exitError{code: 1, err: err}
				case errors.As(err, &noAnswer):
					return &exitError{code: 3, err: noAnswerHelp(noAnswer, message)}
				case err != nil:
					return err
				}
				fmt.Fprintln(c.out, terminalText(res.Answer))
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
	cmd.Flags().StringVar(&requestID, "request-id", "", "send -m under this request ID (a ULID), never twice: to wait again for a request that timed out or was interrupted")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "how long to wait for an answer")
	cmd.Flags().StringVar(&cwd, "cwd", "", "working directory sent as the request's \"cwd\" data (made absolute), read by the template variables")
	cmd.Flags().StringArrayVar(&data, "data", nil, "KEY=VALUE sent as request data (repeatable)")
	return cmd
}

// noAnswerHelp says, in one line, that the outcome is unknown and how to
// learn it without asking twice.
func noAnswerHelp(e *chatclient.NoAnswerError, message string) error {
	return fmt.Errorf("%w; it may still be answered: see with `turnlog replay %s`, or wait again without sending it twice: `turnlog chat --request-id %s -m %s %s`",
		e, events.CommandArg(e.Conversation), e.RequestID, shellQuote(message), events.CommandArg(e.Conversation))
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

type chatClient struct {
	asker       *chatclient.Client
	log         *eventlog.Log
	nc          *nats.Conn
	profile     string
	model       string
	data        map[string]string
	timeout     time.Duration
	out, errOut io.Writer
	// interrupts is where Ctrl-C arrives (see interrupts).
	interrupts <-chan os.Signal
	// outageNotice is how long the connection may be down during a
	// request before chat says it waits for NATS.
	outageNotice time.Duration
	// lastURL is the server chat was last connected to, named while the
	// connection is down.
	lastURL string
}

// errInterrupted is the cause of an ask's end when Ctrl-C stopped it.
var errInterrupted = errors.New("interrupted")

// ask sends one request (under requestID when it is set) and waits for its
// end; onDelta, when set, receives the answer's text as it streams, and
// onEvent each stored event of the request. Ctrl-C stops the wait at once:
// ask then returns an *interruptedError naming the request, which goes on.
func (c *chatClient) ask(ctx context.Context, conv, text, requestID string, onDelta func(worker.Delta), onEvent func(eventlog.Record)) (worker.Result, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	ctx, interrupt := context.WithCancelCause(ctx)
	listening := make(chan struct{})
	go func() {
		defer close(listening)
		select {
		case <-c.interrupts:
			interrupt(errInterrupted)
		case <-ctx.Done():
		}
	}()
	// Once ask returns, a Ctrl-C is the prompt's again.
	defer func() {
		interrupt(nil)
		<-listening
	}()
	defer c.noticeOutage(ctx)()
	req := worker.Request{Conversation: conv, RequestID: requestID, Text: text, Profile: c.profile, Model: c.model, Data: c.data}
	var opts []chatclient.AskOption
	if onEvent != nil {
		opts = append(opts, chatclient.OnEvent(onEvent))
	}
	res, err := c.asker.Ask(ctx, req, onDelta, opts...)
	var noAnswer *chatclient.NoAnswerError
	if errors.As(err, &noAnswer) && errors.Is(context.Cause(ctx), errInterrupted) {
		return res, &interruptedError{noAnswer: noAnswer, text: text}
	}
	return res, err
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
