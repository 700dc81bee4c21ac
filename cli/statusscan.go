package cli

import (
	"fmt"
	"io"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/replay"
)

// notStepsStatus is what `turnlog status` says of the messages on
// conversations' subjects that are not their steps (another NATS client's
// publish, a NATS reply, a damaged step). JetStream keeps no count of
// them: only a read of every stored message finds them, which status does
// with --scan alone, so that it stays fast on a large log. Without it,
// Scanned is false and status says how to count them.
type notStepsStatus struct {
	Scanned bool `json:"scanned"`
	*replay.NotStepsScan
}

// printNotSteps prints the scan's totals, then the conversations that hold
// such messages, each with the command that shows them.
func printNotSteps(w io.Writer, ns notStepsStatus) {
	if !ns.Scanned {
		fmt.Fprint(w, "foreign and quarantined messages: not counted (turnlog status --scan reads every stored message to count them)\n\n")
		return
	}
	fmt.Fprintf(w, "foreign messages: %d, quarantined messages: %d, in %d of %s", ns.Foreign, ns.Quarantined,
		len(ns.In), plural.Count(ns.Conversations, "conversation"))
	if len(ns.In) == 0 {
		fmt.Fprint(w, "\n\n")
		return
	}
	fmt.Fprint(w, " (turnlog replay <conversation> shows them; turnlog repair --yes <conversation> removes them)\n\n")
	fmt.Fprintln(w, "CONVERSATION\tFOREIGN\tQUARANTINED\tSHOWN BY")
	for _, c := range ns.In {
		if c.InvalidID != "" {
			fmt.Fprintf(w, "%s\t%d\t%d\t%s\n", printable(c.Conversation, 80), c.Foreign, c.Quarantined,
				"no turnlog command: the subject names no valid conversation ("+c.InvalidID+"); a NATS client reads it")
			continue
		}
		fmt.Fprintf(w, "%s\t%d\t%d\tturnlog replay %s\n", c.Conversation, c.Foreign, c.Quarantined, events.CommandArg(c.Conversation))
	}
	fmt.Fprintln(w)
}
