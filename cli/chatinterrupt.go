package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"

	"github.com/turnlog/turnlog/chatclient"
	"github.com/turnlog/turnlog/events"
)

// interruptKey is the context key under which tests hand chat its Ctrl-C.
type interruptKey struct{}

// withInterrupts makes chat hear Ctrl-C on ch instead of SIGINT, so a
// test can press it without signalling its own process.
func withInterrupts(ctx context.Context, ch <-chan os.Signal) context.Context {
	return context.WithValue(ctx, interruptKey{}, ch)
}

// interrupts is where chat hears Ctrl-C: the channel withInterrupts put
// in ctx, else SIGINT, which stop stops catching.
func interrupts(ctx context.Context) (ch <-chan os.Signal, stop func()) {
	if ch, ok := ctx.Value(interruptKey{}).(<-chan os.Signal); ok {
		return ch, func() {}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, os.Interrupt)
	return c, func() { signal.Stop(c) }
}

// interruptedError is what a chat request ends with when Ctrl-C stopped
// the wait. Stopping the wait does not cancel the request: once stored, a
// worker answers it. The message names the request and the command that
// waits for its answer (and sends it, under the same ID, if it never
// reached the server).
type interruptedError struct {
	noAnswer *chatclient.NoAnswerError
	text     string
}

func (e *interruptedError) Error() string {
	n := e.noAnswer
	await := fmt.Sprintf("`turnlog chat --request-id %s -m %s %s`", n.RequestID, shellQuote(e.text), events.CommandArg(n.Conversation))
	if !n.Sent {
		return fmt.Sprintf("interrupted before the server acknowledged request %s of conversation %s: it may not have been stored; if it was, it is not cancelled and a worker answers it. %s waits for its answer, and sends it if it never arrived",
			n.RequestID, n.Conversation, await)
	}
	return fmt.Sprintf("interrupted: stopped waiting for request %s of conversation %s, which is not cancelled: a worker answers it. Wait for its answer with %s",
		n.RequestID, n.Conversation, await)
}

func (e *interruptedError) Unwrap() error { return e.noAnswer }
