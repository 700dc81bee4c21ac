package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

// lineRead is one line typed at the prompt, or why there is none.
type lineRead struct {
	line string
	err  error
}

// interactive is chat without -m: a prompt, each line a request whose
// answer streams in, with its tool calls. Ctrl-C while a request runs
// stops the wait and comes back to the prompt, naming the request (which
// goes on); Ctrl-C or Ctrl-D at the prompt leaves.
func (c *chatClient) interactive(ctx context.Context, conv string, in io.Reader) error {
	input, err := lineReader(in, c.out)
	if err != nil {
		return err
	}
	defer input.close()
	write := input.w
	fmt.Fprintf(write, "conversation %s (/replay, /new, /quit; Ctrl-C stops waiting for an answer)\n", conv)
	// One read at a time runs on its own goroutine, so that a Ctrl-C at
	// the prompt is heard while it waits for a line.
	lines := make(chan lineRead, 1)
	for {
		go func() {
			line, err := input.read()
			lines <- lineRead{line, err}
		}()
		var r lineRead
		select {
		case r = <-lines:
		case <-c.interrupts:
			fmt.Fprintln(write)
			return nil
		case <-ctx.Done():
			return nil
		}
		if errors.Is(r.err, io.EOF) {
			return nil
		}
		if r.err != nil {
			return r.err
		}
		line := strings.TrimSpace(r.line)
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
		p := newAnswerPrinter(write)
		res, err := c.ask(ctx, conv, line, "", p.delta, p.event)
		p.finish()
		var interrupted *interruptedError
		switch {
		case errors.As(err, &interrupted):
			fmt.Fprintln(write, interrupted)
		case errors.Is(err, worker.ErrFailed):
			fmt.Fprintln(write, "request failed:", terminalText(res.Failed))
		case err != nil:
			fmt.Fprintln(write, "error:", err)
		case !p.streamed:
			fmt.Fprintln(write, terminalText(res.Answer))
		}
	}
}

// answerPrinter shows one request as it runs: the answer's text as it
// streams, and each tool call (name and arguments) and its result as the
// log stores them, as the console shows them. Deltas and events travel
// apart (core NATS and the log) and arrive on different goroutines, so a
// piece of text is held until the events of the steps before it were
// shown (see worker.Delta.Step): a fast model's answer would otherwise
// show before the tool result it follows from.
type answerPrinter struct {
	mu       sync.Mutex
	w        io.Writer
	streamed bool
	midLine  bool
	// seen is the last step of the request whose events were shown
	// (-1: none yet); held is text that waits for its step's turn.
	seen int
	held []worker.Delta
}

func newAnswerPrinter(w io.Writer) *answerPrinter { return &answerPrinter{w: w, seen: -1} }

func (p *answerPrinter) delta(d worker.Delta) {
	if d.Kind != events.KindLLMText || d.Text == "" {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.held) > 0 || d.Step-1 > p.seen {
		p.held = append(p.held, d)
		return
	}
	p.text(d.Text)
}

// text prints streamed text; p.mu is held.
func (p *answerPrinter) text(s string) {
	p.streamed = true
	s = terminalText(s)
	fmt.Fprint(p.w, s)
	p.midLine = !strings.HasSuffix(s, "\n")
}

// release prints the held text whose step's turn has come; p.mu is held.
func (p *answerPrinter) release(all bool) {
	n := 0
	for _, d := range p.held {
		if !all && d.Step-1 > p.seen {
			break
		}
		p.text(d.Text)
		n++
	}
	p.held = p.held[n:]
}

func (p *answerPrinter) event(rec eventlog.Record) {
	var line string
	switch pl := rec.Payload.(type) {
	case events.ToolCalled:
		line = fmt.Sprintf("tool call %s(%s)", pl.Name, pl.Arguments)
	case events.ToolResult:
		line = "tool result " + pl.Text
		if pl.IsError {
			line = "tool error " + pl.Text
		}
	case events.InferenceFailed:
		// The text streamed so far was that call's, and is not the
		// answer: the screen says so before a retry's text follows it.
		line = "model call failed: " + pl.Error
		if pl.Transient {
			line += " (the text above is not stored; a retry may follow)"
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if line != "" {
		if p.midLine {
			fmt.Fprintln(p.w)
		}
		fmt.Fprintln(p.w, terminalText(line))
		p.midLine = false
	}
	p.seen = max(p.seen, rec.Step)
	p.release(false)
}

// finish shows what is still held (the request is over, or the wait was
// stopped) and ends the streamed text's last line.
func (p *answerPrinter) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.release(true)
	if p.midLine {
		fmt.Fprintln(p.w)
	}
	p.midLine = false
}
