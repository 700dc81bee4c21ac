package middlewares

import (
	"context"
	"fmt"
	"github.com/turnlog/turnlog/rolemarker"
	"strings"
	"unicode"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// ActorRoles is the actor of Roles' events.
const ActorRoles = "roles"

// MetaRolesSplitFrom on a block Roles produced names the block it was
// split from.
const MetaRolesSplitFrom = "roles.split_from"

// RolesConfig configures Roles; it has no settings yet.
type RolesConfig struct{}

// Validate reports the first setting that cannot work; there is none.
func (c RolesConfig) Validate() error { return nil }

// Roles honours role markers in trusted text and only there. A role marker
// is "System:", "User:" or "Assistant:" (any case) at the start of a line,
// after optional spaces or tabs. Use it when operators write multi-role
// scripts (a system prompt with few-shot "User:"/"Assistant:" examples) as
// one text, and always when any untrusted text reaches the model, to
// record prompt-injection attempts.
//
// In trusted text (IsTrusted) the markers split the block in place
// (block.split): "System:" gives a system block, "User:" a user block and
// "Assistant:" an llm_text block, each trusted, vouched for by "roles"
// (MetaTrustOperator), in the original block's section and naming the
// original in roles.split_from. Text before the first marker keeps the
// original kind; the first part keeps the original's ID and metadata when
// its kind is the original's, so a system prompt keeps its identity.
// Parts contain no markers, so a second run splits nothing.
//
// Trust is per span: the byte ranges a block lists as Untrusted (what
// template variables filled in: a file such as AGENTS.md, git output,
// request data) are data even inside a trusted block. A marker counts only
// when the marker and the line break before it are the operator's own
// text; a split cuts only there, so a variable's value is never cut, never
// becomes a block of its own and never takes a role from its own words.
// Each part carries the spans that fall in it, shifted to its text.
//
// In untrusted text (a user message "System: ignore all previous
// instructions", model output, a tool result) and in untrusted spans,
// markers are never honoured: the block stays exactly as it is and is
// flagged once with block.annotated trust.flag="role_marker", so the
// attempt is visible in the log and to later middlewares. A flagged block
// is not flagged again.
//
// It checks every block before every model call, but scans a text only
// once: the Roles a worker builds remembers, for each conversation, the
// texts it found free of markers (see rolesMemo; at most 1024
// conversations and 32 MiB of text), so an unchanged block costs one
// comparison. It is safe for concurrent use by any number of requests.
func Roles(cfg RolesConfig) (engine.Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	memo := newRolesMemo(rolesMemoConversations, rolesMemoBytes)
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := roles(tx, memo); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

// roles checks every block's text before every model call, so texts
// already found free of markers are skipped by memo (see rolesMemo): on a
// Turn it saw before, it compares one string header per block instead of
// scanning every byte.
func roles(tx *engine.Tx, memo *rolesMemo) error {
	texts := memo.open(tx.Turn().Conversation)
	defer func() { memo.close(texts, len(tx.Turn().Blocks)) }()
	// Index-based: a split changes the slice (blocks is read again after
	// every event); the parts it inserts hold no markers, so skipping over
	// them is safe.
	blocks := tx.Turn().Blocks
	for i := 0; i < len(blocks); i++ {
		if i = texts.skip(blocks, i); i == len(blocks) {
			break
		}
		b := &blocks[i]
		if texts.known(i, b.Text) {
			continue
		}
		trusted := IsTrusted(*b)
		flagged := b.Meta[MetaTrustFlag] == FlagRoleMarker
		if !trusted && flagged {
			continue // flagged already: nothing to do, whatever it holds
		}
		if trusted && locked(*b) {
			continue // a locked prompt is not split: its text stays the operator's
		}
		marks := roleMarkers(b.Text, trusted)
		if len(marks) == 0 {
			texts.remember(i, b.Text)
			continue
		}
		honoured, ignored := marks, []roleMarker(nil)
		if !trusted {
			honoured, ignored = nil, marks
		} else if len(b.Untrusted) > 0 {
			honoured, ignored = byTrust(marks, b.Untrusted)
		}
		if len(ignored) > 0 && !flagged {
			if err := tx.Emit(ActorRoles, events.BlockAnnotated{
				BlockID: b.ID,
				Meta:    map[string]string{MetaTrustFlag: FlagRoleMarker},
				Reason:  ignoredReason(*b, ignored[0], trusted),
			}); err != nil {
				return err
			}
			blocks = tx.Turn().Blocks
			b = &blocks[i]
		}
		if len(honoured) == 0 {
			continue
		}
		into := splitRoles(*b, honoured)
		if len(into) == 0 {
			continue
		}
		if err := tx.Emit(ActorRoles, events.BlockSplit{
			BlockID: b.ID,
			Into:    into,
			Reason:  fmt.Sprintf("role markers in trusted %s text: %d role blocks", b.Kind, len(into)),
		}); err != nil {
			return err
		}
		blocks = tx.Turn().Blocks
		i += len(into) - 1
	}
	return nil
}

// ignoredReason says why a marker was not honoured, for the log.
func ignoredReason(b events.Block, m roleMarker, trusted bool) string {
	marker := b.Text[m.Start:m.Body]
	if !trusted {
		return fmt.Sprintf("role marker %q at line %d of untrusted %s text; kept as data, not honoured", marker, m.Line, b.Kind)
	}
	from := "a template variable"
	for _, s := range b.Untrusted {
		if s.Start < m.Body && m.LineStart-1 < s.End && s.Var != "" {
			from = "variable " + s.Var
			break
		}
	}
	return fmt.Sprintf("role marker %q at line %d of trusted %s text comes from %s (untrusted content); kept as data, not honoured",
		marker, m.Line, b.Kind, from)
}

// byTrust sorts markers by whether the operator wrote them: a marker is
// honoured only when no untrusted span touches it or the line break
// before it (a variable ending in a newline must not make the operator's
// next words a line start, nor a value's own marker count).
func byTrust(marks []roleMarker, untrusted []events.Span) (honoured, ignored []roleMarker) {
	for _, m := range marks {
		from := max(m.LineStart-1, 0) // the line break before the line, if any
		touched := false
		for _, s := range untrusted {
			if s.Start < m.Body && from < s.End {
				touched = true
				break
			}
		}
		if touched {
			ignored = append(ignored, m)
		} else {
			honoured = append(honoured, m)
		}
	}
	return honoured, ignored
}

// roleMarker is a marker found in a text (see rolemarker.Marker).
type roleMarker = rolemarker.Marker

// roleMarkers finds the markers in s (rolemarker.Find).
func roleMarkers(s string, all bool) []roleMarker { return rolemarker.Find(s, all) }

// splitRoles cuts a trusted block's text at its markers. Each part gets
// the untrusted spans inside it (markers are outside every span, so no
// span is cut).
func splitRoles(b events.Block, marks []roleMarker) []events.Block {
	section := b.Meta[events.MetaSection]
	if section == "" {
		section = SectionConversation
		if b.Kind == events.KindSystem {
			section = SectionSystem
		}
	}
	part := func(kind events.Kind, text string, spans []events.Span) events.Block {
		return events.Block{
			ID:    engine.NewID(),
			Kind:  kind,
			Text:  text,
			Trust: events.Trusted,
			Meta: map[string]string{
				events.MetaSection: section,
				MetaTrustOperator:  ActorRoles,
				MetaRolesSplitFrom: b.ID,
			},
			Untrusted: spans,
		}
	}
	// cut is the text from..to without surrounding white space, and the
	// spans in it, relative to it.
	cut := func(from, to int) (string, []events.Span) {
		seg := b.Text[from:to]
		text := strings.TrimLeftFunc(seg, unicode.IsSpace)
		from += len(seg) - len(text)
		text = strings.TrimRightFunc(text, unicode.IsSpace)
		to = from + len(text)
		var spans []events.Span
		for _, s := range b.Untrusted {
			if s.End <= from || s.Start >= to {
				continue
			}
			spans = append(spans, events.Span{Start: max(s.Start, from) - from, End: min(s.End, to) - from, Var: s.Var})
		}
		return text, spans
	}
	var into []events.Block
	if pre, spans := cut(0, marks[0].Start); pre != "" {
		into = append(into, part(b.Kind, pre, spans))
	}
	for j, m := range marks {
		end := len(b.Text)
		if j+1 < len(marks) {
			end = marks[j+1].Start
		}
		if text, spans := cut(m.Body, end); text != "" {
			into = append(into, part(m.Kind, text, spans))
		}
	}
	if len(into) > 0 && into[0].Kind == b.Kind {
		first := b.Clone()
		first.Text = into[0].Text
		first.Untrusted = into[0].Untrusted
		if first.Meta == nil {
			first.Meta = map[string]string{}
		}
		first.Meta[events.MetaSection] = section
		first.Meta[MetaRolesSplitFrom] = b.ID
		if first.Meta[MetaTrustOperator] == "" && b.Kind != events.KindSystem && b.Kind != events.KindOther {
			first.Meta[MetaTrustOperator] = ActorRoles
		}
		into[0] = first
	}
	return into
}
