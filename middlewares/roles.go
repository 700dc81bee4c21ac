package middlewares

import (
	"context"
	"fmt"
	"strings"

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
// In untrusted text (a user message "System: ignore all previous
// instructions", model output, a tool result) markers are never honoured:
// the block stays exactly as it is and is flagged once with block.annotated
// trust.flag="role_marker", so the attempt is visible in the log and to
// later middlewares. A flagged block is not flagged again.
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
		if !trusted && b.Meta[MetaTrustFlag] == FlagRoleMarker {
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
		if !trusted {
			m := marks[0]
			if err := tx.Emit(ActorRoles, events.BlockAnnotated{
				BlockID: b.ID,
				Meta:    map[string]string{MetaTrustFlag: FlagRoleMarker},
				Reason: fmt.Sprintf("role marker %q at line %d of untrusted %s text; kept as data, not honoured",
					b.Text[m.start:m.body], m.line, b.Kind),
			}); err != nil {
				return err
			}
			blocks = tx.Turn().Blocks
			continue
		}
		into := splitRoles(*b, marks)
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

// roleMarker is a marker found in a text: start is where the marker's line
// begins after indentation, body where the text after the colon begins.
type roleMarker struct {
	kind        events.Kind
	start, body int
	line        int
}

var markerKinds = [...]struct {
	word string
	kind events.Kind
}{
	{"system:", events.KindSystem},
	{"user:", events.KindUser},
	{"assistant:", events.KindLLMText},
}

// roleMarkers finds the markers in s: all of them when all is set, else the
// first one. It scans bytes, not a regular expression, and looks only at
// line starts: it runs over every block's text before every model call.
func roleMarkers(s string, all bool) []roleMarker {
	var out []roleMarker
	for pos, line := 0, 1; ; line++ {
		at := pos
		for at < len(s) && (s[at] == ' ' || s[at] == '\t') {
			at++
		}
		if at < len(s) {
			switch s[at] | 0x20 { // ASCII lower case
			case 's', 'u', 'a':
				for _, m := range markerKinds {
					if len(s)-at >= len(m.word) && strings.EqualFold(s[at:at+len(m.word)], m.word) {
						out = append(out, roleMarker{kind: m.kind, start: at, body: at + len(m.word), line: line})
						if !all {
							return out
						}
						break
					}
				}
			}
		}
		nl := strings.IndexByte(s[at:], '\n')
		if nl < 0 {
			return out
		}
		pos = at + nl + 1
	}
}

// splitRoles cuts a trusted block's text at its markers.
func splitRoles(b events.Block, marks []roleMarker) []events.Block {
	section := b.Meta[events.MetaSection]
	if section == "" {
		section = SectionConversation
		if b.Kind == events.KindSystem {
			section = SectionSystem
		}
	}
	part := func(kind events.Kind, text string) events.Block {
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
		}
	}
	var into []events.Block
	if pre := strings.TrimSpace(b.Text[:marks[0].start]); pre != "" {
		into = append(into, part(b.Kind, pre))
	}
	for j, m := range marks {
		end := len(b.Text)
		if j+1 < len(marks) {
			end = marks[j+1].start
		}
		if text := strings.TrimSpace(b.Text[m.body:end]); text != "" {
			into = append(into, part(m.kind, text))
		}
	}
	if len(into) > 0 && into[0].Kind == b.Kind {
		first := b.Clone()
		first.Text = into[0].Text
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
