package replay

// This file holds the text of replay --verify and --rerun for a person.

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/internal/plural"
)

// WriteText writes the verification: one line per mismatch, naming the
// event and its sequence, then a summary line.
func (v *Verification) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, m := range v.Mismatches {
		fmt.Fprintf(bw, "MISMATCH event %d (seq %d) %s: %s\n", m.N, m.Seq, m.Field, safe(m.Message))
	}
	switch {
	case !v.OK():
		fmt.Fprintf(bw, "verification of %s FAILED: %s (%s, %s)\n", safe(v.Conversation), plural.Count(len(v.Mismatches), "mismatch"), plural.Count(v.Inferences, "model call"), plural.Count(v.Events, "event"))
	case v.Inferences == 0:
		// Nothing a model received to prove: say what was proved
		// instead of "verified".
		fmt.Fprintf(bw, "checked %s: 0 model calls, so no model input to verify (%s); what the log proves is who stored each step (the dates are the events' own, which their writer gave):\n",
			safe(v.Conversation), plural.Count(v.Events, "event"))
	case v.Inferences == v.Unparsed:
		fmt.Fprintf(bw, "checked %s: %s (%s), %s\n", safe(v.Conversation), plural.Count(v.Inferences, "model call"), plural.Count(v.Events, "event"), unparsedNote(v.Unparsed))
	default:
		read := v.Inferences - v.Unparsed
		match := "all " + plural.Count(read, "model input") + " match"
		if read == 1 {
			match = "its 1 model input matches"
		}
		fmt.Fprintf(bw, "verified %s: %s the log (%s)\n", safe(v.Conversation), match, plural.Count(v.Events, "event"))
		if v.Unparsed > 0 {
			fmt.Fprintf(bw, "and %s\n", unparsedNote(v.Unparsed))
		}
		if v.Wires > 0 {
			fmt.Fprintf(bw, "wire: %s rendered again to the hash the call recorded\n", plural.Count(v.Wires, "request"))
		}
	}
	for _, p := range v.Provenance {
		what := plural.Count(p.Events, "event")
		if p.Blocks > 0 {
			what = plural.Count(p.Blocks, "block") + " (" + what + ")"
		}
		verb := "by " + quote(p.Actor)
		if p.Actor == actorImport {
			verb = "imported"
		}
		fmt.Fprintf(bw, "  %s %s, stored by %s, dated %s (event %d, seq %d)\n", what, verb, writerName(p.Writer),
			p.Time.UTC().Format(timeLayout), p.N, p.Seq)
	}
	if v.Unstored > 0 {
		fmt.Fprintf(bw, "NOT STORED: %d %s of items to the provider's conversation, too large to store: the record marks each by the SHA-256 of its bytes alone (replay shows them)\n",
			v.Unstored, plural.Noun(v.Unstored, "write"))
	}
	if len(v.Writers) > 0 || v.Unattributed > 0 {
		var parts []string
		for _, r := range sortedKeys(v.Writers) {
			parts = append(parts, fmt.Sprintf("%s %s", r, plural.Count(v.Writers[r], "event")))
		}
		if v.Unattributed > 0 {
			parts = append(parts, plural.Count(v.Unattributed, "event")+" unattributed")
		}
		fmt.Fprintf(bw, "stored by: %s\n", strings.Join(parts, ", "))
	}
	if v.Unattributed > 0 {
		fmt.Fprintf(bw, "WARNING: %s unattributed (written before roles were recorded): who stored them is not proved\n",
			plural.Count(v.Unattributed, "event"))
	}
	if v.WiresUnchecked > 0 {
		fmt.Fprintf(bw, "wire: %s of renderings this turnlog cannot render (%s) not checked\n",
			plural.Count(v.WiresUnchecked, "request"), safe(strings.Join(v.UncheckedRenderings, ", ")))
	}
	return bw.Flush()
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// WriteText writes the re-run's outcome: a summary line and, at a
// difference, where it is and both sides' events.
func (r *RerunResult) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	head := fmt.Sprintf("re-ran %s of %s (%s of events taken as recorded), compared %s",
		plural.Count(r.Requests, "request"), safe(r.Conversation), plural.Count(r.Skipped, "group"), plural.Count(r.Events, "event"))
	d := r.Difference
	if d == nil {
		fmt.Fprintln(bw, head+": no difference")
	} else {
		fmt.Fprintln(bw, head)
	}
	if len(r.Profiles) > 0 {
		var used []string
		for _, name := range profileNames(r.Profiles) {
			used = append(used, fmt.Sprintf("%s (%s)", safe(name), plural.Count(r.Profiles[name], "request")))
		}
		fmt.Fprintf(bw, "each request re-ran with the profile its outcome names (one that names none: --profile's): %s\n", strings.Join(used, ", "))
	}
	for _, n := range r.Notes {
		fmt.Fprintf(bw, "note: %s\n", safe(n))
	}
	if d == nil {
		return bw.Flush()
	}
	fmt.Fprintf(bw, "DIFFERENCE at event %d (seq %d), request %s: %s\n", d.N, d.Seq, safe(d.Request), safe(d.Reason))
	side := func(name string, v *EventView) {
		if v == nil {
			fmt.Fprintf(bw, "  %-6s (no event)\n", name)
			return
		}
		fmt.Fprintf(bw, "  %-6s %s by %s: %s\n", name, v.Type, safe(v.Actor), safe(string(v.Payload)))
	}
	side("log:", d.Log)
	side("rerun:", d.Rerun)
	if d.RerunError != "" {
		fmt.Fprintf(bw, "  the re-run's chain returned: %s\n", safe(d.RerunError))
	}
	return bw.Flush()
}

// unparsedNote says what n unparsed gateway calls are to --verify.
func unparsedNote(n int) string {
	if n == 1 {
		return "1 call whose request the gateway could not read (unparsed): it is recorded by the SHA-256 of its bytes alone, with no input to re-project"
	}
	return fmt.Sprintf("%d calls whose requests the gateway could not read (unparsed): each is recorded by the SHA-256 of its bytes alone, with no input to re-project", n)
}
