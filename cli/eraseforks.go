package cli

// How erase lists a conversation's forks and the conversations it could
// not check: each list after a header line ending in ':', one
// conversation a line with its ID first, and an empty line after it, so
// that a script can read the IDs (erase --help says so).

import (
	"errors"
	"fmt"
	"io"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/internal/plural"
)

// writeForks writes header and one line per fork: its ID and where it
// branched off, as fork and replay write it (<conversation>@<n>).
func writeForks(w io.Writer, header string, forks []eventlog.Fork) {
	fmt.Fprintln(w, header)
	for _, f := range forks {
		fmt.Fprintf(w, "%s  forked from %s@%d\n", f.Conversation, f.From, f.At)
	}
	fmt.Fprintln(w)
}

// writeKept says, after conversation was erased alone, which forks still
// hold a copy of its blocks and the commands that erase them: one per
// direct fork, which finds the forks of that fork in turn.
func writeKept(w io.Writer, conversation string, forks []eventlog.Fork) {
	if len(forks) == 0 {
		return
	}
	fmt.Fprintf(w, "%s of %s still hold a copy of its blocks, not erased; to erase them:\n",
		plural.Count(len(forks), "fork"), conversation)
	for _, f := range forks {
		if f.Depth == 1 {
			fmt.Fprintf(w, "  turnlog erase %s --forks\n", f.Conversation)
		}
	}
	writeForks(w, "forks of "+conversation+" not erased:", forks)
}

// writeUnchecked lists the conversations whose first message could not be
// read, so that whether they are forks of conversation is unknown.
func writeUnchecked(w io.Writer, conversation string, unchecked []eventlog.Unchecked) {
	if len(unchecked) == 0 {
		return
	}
	fmt.Fprintf(w, "%s could not be checked: the first message is not a step, so whether it is a fork of %s (or of one of its forks) is unknown; turnlog replay <ID> shows the message, turnlog erase <ID> --forks erases one with its own forks.\n",
		plural.Count(len(unchecked), "conversation"), conversation)
	fmt.Fprintln(w, "conversations not checked:")
	for _, u := range unchecked {
		fmt.Fprintf(w, "%s  %s; turnlog repair %s removes it\n", u.Conversation, uncheckedReason(u.Err), u.Conversation)
	}
	fmt.Fprintln(w)
}

// uncheckedReason says in a few words why a first message is not a step.
func uncheckedReason(err error) string {
	var fe *eventlog.ForeignMessageError
	var ce *eventlog.CorruptMessageError
	switch {
	case errors.As(err, &fe):
		return fmt.Sprintf("message %d: not written by turnlog (%s)", fe.Seq, fe.Reason)
	case errors.As(err, &ce):
		return fmt.Sprintf("message %d: not a step (%v)", ce.Seq, ce.Err)
	}
	return err.Error()
}
