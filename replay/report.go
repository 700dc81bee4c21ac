package replay

import (
	"bufio"
	"encoding/json"
	"fmt"
	"github.com/turnlog/turnlog/calls"
	"io"
	"iter"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/projector"
)

// timeLayout shows event times to the millisecond, in UTC.
const timeLayout = "2006-01-02T15:04:05.000Z"

// WriteText writes the timeline for a person, as WriteTimeline does.
func (h *History) WriteText(w io.Writer) error {
	return WriteTimeline(w, h.Conversation, func(yield func(*Entry, error) bool) {
		for i := range h.Events {
			if !yield(&h.Events[i], nil) {
				return
			}
		}
	})
}

// WriteTimeline writes a timeline for a person as it comes (see Entries):
// a header, one line per event (n, seq, time, type, actor, cause:step,
// summary) and under each inference.started the model call: its active
// system prompt with its history and full text, and its input Turn block
// by block (index, kind, ID, trust, section, other metadata, a preview of
// the text); then a line with the totals. Every text from the log is
// escaped, so it cannot drive the terminal. It returns the first error of
// entries or w.
func WriteTimeline(w io.Writer, conversation string, entries iter.Seq2[*Entry, error]) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "conversation %s\n", safe(conversation))
	fmt.Fprintf(bw, "%5s %6s  %-24s  %-21s  %-21s  %-6s  %s\n", "n", "seq", "time", "type", "actor", "by", "cause:step  summary")
	n, calls, quarantined, foreign := 0, 0, 0, 0
	for e, err := range entries {
		if err != nil {
			if n > 0 { // an error before the first event (a missing conversation) prints no table
				bw.Flush()
			}
			return err
		}
		if e.Quarantined != nil || e.Foreign != nil {
			if e.Foreign != nil {
				foreign++
			} else {
				quarantined++
			}
			fmt.Fprintf(bw, "%5s %6d  %-24s  %-21s  %-21s  %s\n", "-", e.Seq, "", e.Type, "", e.Summary)
			continue
		}
		n++
		writeEntry(bw, e)
		if e.Inference != nil {
			calls++
			writeInference(bw, e.Inference, "        ")
		}
	}
	fmt.Fprintf(bw, "%s, %s", plural.Count(n, "event"), plural.Count(calls, "model call"))
	if quarantined > 0 {
		fmt.Fprintf(bw, ", %s (turnlog repair --yes %s removes them)", plural.Count(quarantined, "quarantined message"), events.CommandArg(safe(conversation)))
	}
	if foreign > 0 {
		fmt.Fprintf(bw, ", %s (not written by turnlog) ignored", plural.Count(foreign, "foreign message"))
	}
	fmt.Fprintln(bw)
	return bw.Flush()
}

// WriteTimelineJSON writes a timeline as it comes (see Entries), as the
// JSON document of a History: {"conversation", "events": [...],
// "inferences"}, indented by two spaces.
func WriteTimelineJSON(w io.Writer, conversation string, entries iter.Seq2[*Entry, error]) error {
	bw := bufio.NewWriter(w)
	name, _ := json.Marshal(conversation)
	fmt.Fprintf(bw, "{\n  \"conversation\": %s,\n  \"events\": [", name)
	n, calls := 0, 0
	for e, err := range entries {
		if err != nil {
			if n > 0 { // an error before the first event prints no half document
				bw.Flush()
			}
			return err
		}
		if e.Inference != nil {
			calls++
		}
		data, err := json.MarshalIndent(e, "    ", "  ")
		if err != nil {
			return err
		}
		if n > 0 {
			bw.WriteString(",")
		}
		bw.WriteString("\n    ")
		bw.Write(data)
		n++
	}
	if n > 0 {
		bw.WriteString("\n  ")
	}
	fmt.Fprintf(bw, "],\n  \"inferences\": %d\n}\n", calls)
	return bw.Flush()
}

func writeEntry(w io.Writer, e *Entry) {
	fmt.Fprintf(w, "%5d %6d  %-24s  %-21s  %-21s  %-6s  %s:%d  %s\n", e.N, e.Seq, e.Time.UTC().Format(timeLayout), e.Type,
		safe(e.Actor), writerColumn(e.Writer), safe(e.Cause), e.Step, e.Summary)
}

// writerColumn is the timeline's "stored by" column: the role, or "-" for
// a step stored before roles were recorded (unattributed).
func writerColumn(w string) string {
	if w == "" {
		return "-"
	}
	return safe(w)
}

// WriteText writes one model call as History.WriteText shows it, after its
// event's line.
func (e *Entry) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	writeEntry(bw, e)
	if e.Inference != nil {
		writeInference(bw, e.Inference, "  ")
	}
	return bw.Flush()
}

func writeInference(w io.Writer, in *Inference, indent string) {
	proof := "verified: the log re-projects to this input"
	switch {
	case in.Gateway["unparsed"] != "":
		proof = "not verifiable: the gateway could not read the request, and the log holds the SHA-256 of its bytes alone"
	case !in.Verified:
		proof = "NOT VERIFIED: the log re-projects to another input (see replay --verify)"
	}
	s := fmt.Sprintf("model call #%d (event %d): model %s, input %s, %s", in.Index, in.N, quote(in.Model), short(in.InputHash), proof)
	if in.Purpose != "" {
		s += ", purpose " + quote(in.Purpose)
	}
	fmt.Fprintln(w, indent+s)
	if in.WireSHA256 != "" {
		fmt.Fprintf(w, "%swire: request %s, rendering %s\n", indent, short(in.WireSHA256), quote(in.WireVersion))
	}
	if g := in.Gateway; g != nil {
		// An app's call through the recording gateway: the hash of the
		// bytes it sent (--wire prints the canonical request).
		s := fmt.Sprintf("%sgateway: %s call, request bytes sha256 %s, threading %s", indent, safe(g["api"]), short(g["wire_sha256"]), safe(g["threading"]))
		if prev := g["previous_response_id"]; prev != "" {
			// The input is the request's new items; the rest is on the
			// provider's side, from the call that produced prev.
			s += ", continues response " + quote(prev) + " (its input: the new items only)"
		}
		if pc := g["provider_conversation"]; pc != "" {
			// The provider holds the conversation's items and reads
			// them before the request's.
			s += ", continues the provider's conversation " + quote(pc) + " (its input: the new items only)"
		}
		if g["compact"] == "true" {
			s += ", a compaction: its output replaces the history"
		}
		if why := g["unparsed"]; why != "" {
			s += ", request not read: " + quote(why)
		}
		for _, name := range calls.RecordedHeaders {
			if v, ok := g[calls.MetaHeaderPrefix+name]; ok {
				s += ", header " + name + ": " + quote(v)
			}
		}
		fmt.Fprintln(w, s)
	}
	for _, f := range in.Findings {
		fmt.Fprintf(w, "%sFINDING %s: %s (blocks %s)\n", indent, f.Rule, safe(f.Detail), safe(strings.Join(f.Blocks, ", ")))
	}
	writePrompt(w, in.SystemPrompt, indent)
	if in.Turn != nil {
		writeTurn(w, in.Turn, indent, in.WireNotes)
	}
}

// WritePrompt writes an active system prompt as replay shows it: where it
// came from (source, trust, the event and actor that set it, the last
// replacement, the lock and who holds it, the template and its values),
// then its text, line by line. nil writes "system prompt: none".
func WritePrompt(w io.Writer, p *ActivePrompt) error {
	bw := bufio.NewWriter(w)
	writePrompt(bw, p, "")
	return bw.Flush()
}

func writePrompt(w io.Writer, p *ActivePrompt, indent string) {
	if p == nil {
		fmt.Fprintln(w, indent+"system prompt: none")
		return
	}
	var parts []string
	if p.Source != "" {
		parts = append(parts, "source "+quote(p.Source))
	}
	if p.Trust != "" {
		parts = append(parts, string(p.Trust))
	}
	if p.SetAt > 0 {
		by := string(p.SetBy)
		if p.SetActor != "" {
			by += " (" + safe(p.SetActor) + ")"
		}
		parts = append(parts, fmt.Sprintf("set at event %d by %s", p.SetAt, by))
	} else {
		parts = append(parts, "origin not in the log")
	}
	if p.ReplacedAt > 0 {
		by := ""
		if p.ReplacedBy != "" {
			by = " by " + safe(p.ReplacedBy)
		}
		parts = append(parts, fmt.Sprintf("last replaced at event %d%s (%s)", p.ReplacedAt, by, plural.Count(p.Replacements, "replacement")))
	}
	if p.Locked {
		lock := "locked"
		if p.LockedAt > 0 {
			lock += fmt.Sprintf(" at event %d", p.LockedAt)
		}
		if p.LockedBy != "" {
			lock += " by " + safe(p.LockedBy)
		}
		parts = append(parts, lock)
	}
	if p.TemplateHash != "" {
		parts = append(parts, "template "+short(p.TemplateHash))
		if len(p.Variables) > 0 {
			parts = append(parts, "variables "+kvList(p.Variables))
		}
	}
	if note := spanNote(p.Untrusted); note != "" {
		parts = append(parts, note)
	}
	fmt.Fprintf(w, "%ssystem prompt %s at index %d, hash %s: %s\n", indent, safe(p.ID), p.Index, short(p.Hash), strings.Join(parts, ", "))
	writePromptText(w, p.Text, p.Untrusted, indent)
}

// writeTurn writes t block by block, each with what became of it in the
// request where notes say (engine.BlockNote).
func writeTurn(w io.Writer, t *projector.Turn, indent string, notes []engine.BlockNote) {
	fmt.Fprintf(w, "%sturn: %s", indent, plural.Count(len(t.Blocks), "block"))
	if len(t.Data) > 0 {
		fmt.Fprintf(w, ", data %s", kvList(t.Data))
	}
	fmt.Fprintln(w)
	for i := range t.Blocks {
		b := &t.Blocks[i]
		var attrs []string
		if b.Trust != "" {
			attrs = append(attrs, string(b.Trust))
		}
		if s := b.Meta[events.MetaSection]; s != "" {
			attrs = append(attrs, "section="+quote(s))
		}
		if b.CallID != "" {
			attrs = append(attrs, "call_id="+quote(b.CallID))
		}
		if b.IsError {
			attrs = append(attrs, "error")
		}
		if len(b.Untrusted) > 0 {
			attrs = append(attrs, plural.Count(len(b.Untrusted), "untrusted span"))
		}
		if len(b.Meta) > 0 {
			other := make(map[string]string, len(b.Meta))
			for k, v := range b.Meta {
				if k != events.MetaSection {
					other[k] = v
				}
			}
			if len(other) > 0 {
				attrs = append(attrs, kvList(other))
			}
		}
		a := ""
		if len(attrs) > 0 {
			a = "  " + strings.Join(attrs, " ")
		}
		fmt.Fprintf(w, "%s  [%d] %-11s %s%s  %s\n", indent, i, b.Kind, safe(b.ID), a, preview(*b))
		for _, n := range notes {
			if n.Index == i {
				fmt.Fprintf(w, "%s      -> %s\n", indent, safe(n.Note))
			}
		}
	}
}

// WriteText writes the point: the Turn after event At, block by block, and
// its active system prompt.
func (p *Point) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "%s@%d (of %s)\n", safe(p.Conversation), p.At, plural.Count(p.Events, "event"))
	writePrompt(bw, p.SystemPrompt, "")
	writeTurn(bw, p.Turn, "", nil)
	return bw.Flush()
}
