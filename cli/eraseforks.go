package cli

// How erase lists a conversation's forks and the conversations it could
// not check: each list after a header line ending in ':', one
// conversation a line with its ID first, and an empty line after it, so
// that a script can read the IDs (erase --help says so).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
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
			fmt.Fprintf(w, "  turnlog erase --forks %s\n", events.CommandArg(f.Conversation))
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
	fmt.Fprintf(w, "%s could not be checked: the first message is not a step, so whether it is a fork of %s (or of one of its forks) is unknown; turnlog replay <ID> shows the message, turnlog erase --forks <ID> erases one with its own forks.\n",
		plural.Count(len(unchecked), "conversation"), conversation)
	fmt.Fprintln(w, "conversations not checked:")
	for _, u := range unchecked {
		fmt.Fprintf(w, "%s  %s; turnlog repair %s removes it\n", u.Conversation, uncheckedReason(u.Err), events.CommandArg(u.Conversation))
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

// maxLateSearches bounds how many times erase searches again for forks
// made while it ran: each search that finds some erases them (with
// --forks), and forks of those can only have been made before they were
// erased.
const maxLateSearches = 3

// eraseLateForks searches again, after conversation was erased, for
// forks made while erase ran (found is what the first search found) and,
// with --forks, erases them, deepest first, writing a line each to out.
// It returns what the last search found, the forks erased before
// included, for the lists erase writes.
func eraseLateForks(ctx context.Context, out io.Writer, l *eventlog.Log, conversation string, erase bool, found eventlog.ForkSearch) (eventlog.ForkSearch, error) {
	handled := map[string]bool{conversation: true}
	for _, f := range found.Forks {
		handled[f.Conversation] = true
	}
	for range maxLateSearches {
		// From every conversation erased so far: a fork of a fork erased
		// since names that fork, which the conversation no longer reaches.
		from := []string{conversation}
		if erase {
			from = slices.Collect(maps.Keys(handled))
			slices.Sort(from)
		}
		again, err := l.ForksOf(ctx, from)
		if err != nil {
			return found, fmt.Errorf("erase %s: erased, but the search for forks made while erase ran failed: %w; run the same command again to find them", conversation, err)
		}
		var late []eventlog.Fork
		for _, f := range again.Forks {
			if !handled[f.Conversation] {
				late = append(late, f)
			}
		}
		if !erase {
			// Listed, not erased: the whole list as it is now.
			return again, nil
		}
		found.Unchecked = again.Unchecked
		if len(late) == 0 {
			return found, nil
		}
		for _, f := range slices.Backward(late) {
			got, err := l.Erase(ctx, f.Conversation)
			if err != nil {
				return found, fmt.Errorf("erase %s: a fork made while erase ran, %s: %w; run the same command again to erase it", conversation, f.Conversation, err)
			}
			fmt.Fprintln(out, erasedLine(f.Conversation, got)+" (a fork made while erase ran)")
			handled[f.Conversation] = true
			found.Forks = append(found.Forks, f)
		}
	}
	return found, nil
}
