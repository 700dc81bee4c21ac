package replay

import (
	"encoding/json"
	"fmt"
	"github.com/turnlog/turnlog/calls"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
)

// Summary says in one line what an event did, for timelines in any
// front end. Texts are quoted previews with control characters escaped, so
// untrusted text cannot drive a terminal.
func Summary(e events.Event) string {
	switch p := e.Payload.(type) {
	case events.ConversationStarted:
		var parts []string
		if p.ForkedFrom != "" {
			parts = append(parts, fmt.Sprintf("forked from %s@%d", safe(p.ForkedFrom), p.ForkedAt))
		}
		if p.Profile != "" {
			parts = append(parts, "profile "+quote(p.Profile))
		}
		if len(p.Blocks) > 0 {
			parts = append(parts, plural.Count(len(p.Blocks), "block"))
		}
		if len(p.Data) > 0 {
			parts = append(parts, "data "+keyList(p.Data))
		}
		if len(parts) == 0 {
			return "started"
		}
		return "started: " + strings.Join(parts, ", ")
	case events.UserAppended:
		return fmt.Sprintf("user %s%s %s", safe(p.BlockID), trustNote(p.Trust), quote(p.Text))
	case events.SystemPromptSet:
		s := fmt.Sprintf("system %s at index %d%s", safe(p.BlockID), p.Index, trustNote(p.Trust))
		if src := p.Meta[events.MetaSystemPromptSource]; src != "" {
			s += " source " + quote(src)
		}
		if p.TemplateHash != "" {
			s += " template " + short(p.TemplateHash)
		}
		return s + " " + quote(p.Text)
	case events.SystemPromptReplaced:
		s := fmt.Sprintf("system %s replaced", safe(p.BlockID))
		if p.Reason != "" {
			s += " (" + safe(p.Reason) + ")"
		}
		if src, ok := p.Meta[events.MetaSystemPromptSource]; ok || p.PreviousSource != "" {
			from := p.PreviousSource
			if from == "" {
				from = "unknown"
			}
			if !ok {
				src = from // the source did not change
			}
			s += " source " + quote(from) + " -> " + quote(src)
		}
		return s + ": " + quote(p.Previous) + " -> " + quote(p.Text)
	case events.SystemPromptLocked:
		return fmt.Sprintf("system %s locked by %s%s", safe(p.BlockID), safe(e.Actor), reason(p.Reason))
	case events.SystemPromptUnlocked:
		return fmt.Sprintf("system %s unlocked by %s%s", safe(p.BlockID), safe(e.Actor), reason(p.Reason))
	case events.ReasoningAppended:
		if p.Text == "" && p.Encrypted != "" {
			return fmt.Sprintf("reasoning %s (encrypted)", safe(p.BlockID))
		}
		return fmt.Sprintf("reasoning %s %s", safe(p.BlockID), quote(p.Text))
	case events.LLMTextAppended:
		return fmt.Sprintf("llm_text %s %s", safe(p.BlockID), quote(p.Text))
	case events.ToolCalled:
		return fmt.Sprintf("tool_call %s %s call_id %s", safe(p.BlockID), quote(p.Name+"("+p.Arguments+")"), safe(p.CallID))
	case events.ToolResult:
		s := fmt.Sprintf("tool_result %s call_id %s", safe(p.BlockID), safe(p.CallID))
		if p.IsError {
			s += " error"
		}
		return s + " " + quote(p.Text)
	case events.BlocksReordered:
		return fmt.Sprintf("%s reordered%s", plural.Count(len(p.Order), "block"), reason(p.Reason))
	case events.BlocksRemoved:
		return fmt.Sprintf("removed %s%s", idList(p.BlockIDs), reason(p.Reason))
	case events.BlockAnnotated:
		return fmt.Sprintf("annotated %s %s%s", safe(p.BlockID), kvList(p.Meta), reason(p.Reason))
	case events.BlockSplit:
		return fmt.Sprintf("split %s into %s%s", safe(p.BlockID), plural.Count(len(p.Into), "block"), reason(p.Reason))
	case events.BlockInserted:
		if unstoredMark(p) {
			return unstoredSummary(p)
		}
		return fmt.Sprintf("inserted %s %s at %d %s%s", p.Block.Kind, safe(p.Block.ID), p.Index, quote(p.Block.Text), reason(p.Reason))
	case events.TurnCompacted:
		s := "compacted " + plural.Count(len(p.Removed), "block")
		if p.Summary != nil {
			s += " into " + safe(p.Summary.ID) + " " + quote(p.Summary.Text)
		}
		return s + reason(p.Reason)
	case events.DataSet:
		var parts []string
		if len(p.Values) > 0 {
			parts = append(parts, kvList(p.Values))
		}
		if len(p.Unset) > 0 {
			parts = append(parts, "unset "+idList(p.Unset))
		}
		return "data " + strings.Join(parts, ", ")
	case events.InferenceStarted:
		s := fmt.Sprintf("model %s, %s, input %s", quote(p.Model), plural.Count(p.Blocks, "block"), short(p.InputHash))
		if p.Purpose != "" {
			s += ", purpose " + quote(p.Purpose)
		}
		return s
	case events.InferenceFinished:
		s := fmt.Sprintf("finished%s, tokens %d in / %d out", latency(" in ", p.Duration), p.PromptTokens, p.CompletionTokens)
		if p.PromptTokens == 0 && p.CompletionTokens == 0 {
			// A model call reads at least one token: none is none
			// reported (an OpenAI stream without include_usage).
			s = fmt.Sprintf("finished%s, no token counts reported", latency(" in ", p.Duration))
		}
		if p.StopReason != "" {
			s += ", stop " + quote(p.StopReason)
		}
		if p.OtherChoices != "" {
			// The request asked for several answers ("n"): the blocks
			// above are the first; the others are kept in the event.
			// A choice the gateway left out, the outcome being too large
			// to store with it, is {"index", "omitted_bytes"} alone.
			var others []struct {
				Message      json.RawMessage `json:"message"`
				OmittedBytes *int            `json:"omitted_bytes"`
			}
			if json.Unmarshal([]byte(p.OtherChoices), &others) == nil {
				left := 0
				for _, o := range others {
					if o.OmittedBytes != nil && o.Message == nil {
						left++
					}
				}
				s += fmt.Sprintf(", %s kept beside the first (other_choices)", plural.Count(len(others)-left, "other choice"))
				if left > 0 {
					s += fmt.Sprintf(", %d left out (too large to store)", left)
				}
			}
		}
		if p.Logprobs != "" {
			var lp struct {
				Content []json.RawMessage `json:"content"`
			}
			if json.Unmarshal([]byte(p.Logprobs), &lp) == nil {
				s += fmt.Sprintf(", logprobs of %s kept (logprobs)", plural.Count(len(lp.Content), "token"))
			}
		}
		if p.LogprobsOmitted != 0 {
			s += fmt.Sprintf(", logprobs not kept: %d bytes, over the record's limit", p.LogprobsOmitted)
		}
		return s
	case events.InferenceFailed:
		s := fmt.Sprintf("failed%s: %s", latency(" after ", p.Duration), quote(p.Error))
		if p.Transient {
			s += " (transient)"
		}
		if len(p.Partial) > 0 {
			s += "; partial output, received by the client, not in the Turn: " + partialPreview(p.Partial)
		}
		if e.Actor == calls.Actor && p.InferenceID != e.Cause {
			// A gateway call is its step's cause: closed by another
			// call's step, it is one that was left open (see the
			// gateway's abandoned calls).
			s = "call " + safe(p.InferenceID) + " " + s
		}
		return s
	case events.RequestCompleted:
		return "completed after " + plural.Count(p.Inferences, "model call")
	case events.RequestFailed:
		return "failed: " + quote(p.Reason)
	case events.FindingRecorded:
		return fmt.Sprintf("finding %s at call %s: %s", safe(p.Rule), safe(p.InferenceID), quote(p.Detail))
	case events.MessageRemoved:
		return fmt.Sprintf("removed message %d (%d bytes, sha256 %s): %s", p.Seq, p.Size, short(p.SHA256), quote(p.Reason))
	}
	return string(e.Type)
}

// partialPreview shows a failed call's partial output: up to 3 blocks,
// each its kind and a quoted preview, and how many more.
func partialPreview(bs []events.Block) string {
	var parts []string
	for i, b := range bs {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(bs)-i))
			break
		}
		text := b.Text
		if b.Kind == events.KindToolCall {
			text = b.ToolName + "(" + b.Arguments + ")"
		}
		parts = append(parts, string(b.Kind)+" "+quote(text))
	}
	return strings.Join(parts, ", ")
}

func trustNote(t events.Trust) string {
	if t == events.Trusted {
		return " trusted"
	}
	return ""
}

func reason(r string) string {
	if r == "" {
		return ""
	}
	return ": " + quote(r)
}

// unstoredMark reports whether p is the block.inserted that marks items
// put into a provider's conversation and not stored.
func unstoredMark(p events.Payload) bool {
	b, ok := p.(events.BlockInserted)
	return ok && b.Block.Meta[calls.MetaUnstored] != ""
}

// unstoredSummary says what the block that marks items put into a
// provider's conversation, and not stored, stands for
// (calls.PlanItemsUnstored): the gap in the record, in words a reader
// does not miss.
func unstoredSummary(p events.BlockInserted) string {
	m := p.Block.Meta
	items := safe(m[calls.MetaItems]) + " items"
	if n, err := strconv.Atoi(m[calls.MetaItems]); err == nil {
		items = plural.Count(n, "item")
	}
	return fmt.Sprintf("inserted %s %s at %d: NOT STORED: %s put into the provider's conversation by %s (the request's body: %s bytes, sha256 %s)%s",
		p.Block.Kind, safe(p.Block.ID), p.Index, items, quote(m[calls.MetaAddedBy]), safe(m[calls.MetaWireBytes]), short(m[calls.MetaWireSHA256]),
		reason(m[calls.MetaUnstored]))
}

// short is the first 12 digits of a hash, enough to compare by eye, after
// the format prefix of a Turn hash ("v2:"), which says how it was made.
func short(h string) string {
	n := 12
	if i := strings.IndexByte(h, ':'); i >= 0 && i < 8 {
		n += i + 1 // a Turn hash's format ("v2:") and then 12 digits
	}
	if len(h) > n {
		return safe(h[:n]) + "…"
	}
	return safe(h)
}

// idList shows up to 5 IDs and how many more.
func idList(ids []string) string {
	const max = 5
	var b strings.Builder
	for i, id := range ids {
		if i == max {
			fmt.Fprintf(&b, " (+%d)", len(ids)-max)
			break
		}
		if i > 0 {
			b.WriteString(" ")
		}
		b.WriteString(safe(id))
	}
	return b.String()
}

func keyList(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return idList(keys)
}

// kvList shows a string map as k="v" pairs in key order.
func kvList(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = safe(k) + "=" + quote(m[k])
	}
	return strings.Join(parts, " ")
}

// latency is a call's duration after word, or "" when it is unknown
// (zero: a logged call imported without one; no call takes no time).
func latency(word string, d time.Duration) string {
	if d == 0 {
		return ""
	}
	return word + d.Round(time.Microsecond).String()
}
