package middlewares

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// ActorOrdering is the actor of Ordering's events.
const ActorOrdering = "ordering"

// Prompt sections, the values of the events.MetaSection metadata, in their
// default order.
const (
	SectionSystem           = "system"
	SectionUserContext      = "user_context"
	SectionTeamContext      = "team_context"
	SectionConversation     = "conversation"
	SectionPostConversation = "post_conversation"
)

// DefaultSections is the order Ordering uses unless told otherwise.
var DefaultSections = []string{SectionSystem, SectionUserContext, SectionTeamContext, SectionConversation, SectionPostConversation}

// OrderingConfig configures Ordering.
type OrderingConfig struct {
	// Sections lists the sections in the order the model must see them
	// (default DefaultSections). It must contain "system" and
	// "conversation", where blocks without a section go.
	Sections []string
}

func (c *OrderingConfig) setDefaults() {
	if len(c.Sections) == 0 {
		c.Sections = DefaultSections
	}
}

// Validate reports the first setting that cannot work.
func (c OrderingConfig) Validate() error {
	seen := map[string]bool{}
	for i, s := range c.Sections {
		if s == "" {
			return fmt.Errorf("ordering: Sections[%d] is empty", i)
		}
		if seen[s] {
			return fmt.Errorf("ordering: section %q is listed twice in Sections", s)
		}
		seen[s] = true
	}
	for _, s := range []string{SectionSystem, SectionConversation} {
		if !seen[s] {
			return fmt.Errorf("ordering: Sections %v lacks %q, where blocks without a section go; add it", c.Sections, s)
		}
	}
	return nil
}

// Ordering sorts the Turn's blocks by prompt section (events.MetaSection):
// by default system, user_context, team_context, conversation,
// post_conversation. Use it when middlewares or templates add context
// blocks (a user profile, team documents, a reminder after the
// conversation) in whatever order they run, and the model must receive
// them in one fixed layout.
//
// A block without a section (or with one not in Sections) belongs to
// "conversation", except the conversation's prompt: the first such system
// block, and any that comes before every other block, belong to "system".
// A later system block after the conversation began (an imported file's
// later system or developer message) is a message of the conversation and
// stays where it is, among the conversation's blocks. The
// sort is stable, so blocks of one section keep their order, and it moves
// units, never single blocks: a reasoning block stays right before the
// block that follows it, and a tool call stays with its result (see
// Units). A unit goes where its first non-reasoning block goes.
//
// It emits one blocks.reordered when the order changes, and nothing when
// the Turn is already in order.
func Ordering(cfg OrderingConfig) (engine.Middleware, error) {
	cfg.setDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	sections := slices.Clone(cfg.Sections)
	o := orderer{
		sections:     sections,
		system:       slices.Index(sections, SectionSystem),
		conversation: slices.Index(sections, SectionConversation),
		reason:       "order by section: " + strings.Join(sections, ", "),
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if order := o.order(tx.Turn().Blocks); order != nil {
				if err := tx.Emit(ActorOrdering, events.BlocksReordered{Order: order, Reason: o.reason}); err != nil {
					return err
				}
			}
			return next(ctx, tx)
		}
	}, nil
}

type orderer struct {
	// sections in order: a block's rank is its section's index. A few
	// string comparisons beat a map lookup for the handful of sections a
	// prompt has, and blockRank runs for every block before every call.
	sections             []string
	system, conversation int
	reason               string
}

// placement is what rank needs to know of the blocks before the one it
// ranks: whether the conversation's prompt (a system block without a
// section) and a block of another kind came already.
type placement struct{ prompt, other bool }

// rank is where b goes, given the blocks before it (see Ordering); it
// updates p for the next block. Most blocks have no metadata: len, which
// is inlined, spares them the map lookup.
func (o *orderer) rank(p *placement, b *events.Block) int {
	if len(b.Meta) > 0 {
		if s := b.Meta[events.MetaSection]; s != "" {
			if r := slices.Index(o.sections, s); r >= 0 {
				if b.Kind != events.KindSystem {
					p.other = true
				}
				return r
			}
		}
	}
	if b.Kind != events.KindSystem {
		p.other = true
		return o.conversation
	}
	if p.prompt && p.other {
		// A later system message, not the prompt: it stays among the
		// conversation's blocks.
		return o.conversation
	}
	p.prompt = true
	return o.system
}

// ranks is the rank of every block, in order.
func (o *orderer) ranks(blocks []events.Block) []int {
	out := make([]int, len(blocks))
	var p placement
	for i := range blocks {
		out[i] = o.rank(&p, &blocks[i])
	}
	return out
}

// unitRank is where a unit goes: where its first non-reasoning block goes.
func unitRank(blocks []events.Block, ranks []int, start, end int) int {
	lead := start
	for lead < end-1 && blocks[lead].Kind == events.KindReasoning {
		lead++
	}
	return ranks[lead]
}

// inOrder is order's fast path: when all blocks are in order, so are the
// units, whose ranks are those of some of these blocks, in the same order.
// It runs before every model call, on every block, so it is written for
// the common block (no metadata, not a system block) and kept out of
// order, whose registers it would otherwise share.
//
//go:noinline
func (o *orderer) inOrder(blocks []events.Block) bool {
	conversation := o.conversation
	var p placement
	prev := -1
	for i := range blocks {
		b := &blocks[i]
		r := conversation
		if b.Meta != nil || b.Kind == events.KindSystem {
			r = o.rank(&p, b)
		} else {
			p.other = true
		}
		if r < prev {
			return false
		}
		prev = r
	}
	return true
}

// order returns the sorted block IDs, or nil when blocks are in order. The
// check allocates nothing; only a Turn that needs sorting pays for it.
func (o *orderer) order(blocks []events.Block) []string {
	if o.inOrder(blocks) {
		return nil
	}
	// A block out of order may still sit inside a unit that is in order
	// (a context block between a tool call and its result): check units.
	ranks := o.ranks(blocks)
	sorted, prev := true, -1
	for start := 0; start < len(blocks); {
		end := unitEnd(blocks, start)
		r := unitRank(blocks, ranks, start, end)
		if r < prev {
			sorted = false
			break
		}
		prev, start = r, end
	}
	if sorted {
		return nil
	}
	type unit struct {
		Unit
		rank int
	}
	var ranked []unit
	for _, u := range units(blocks) {
		ranked = append(ranked, unit{u, unitRank(blocks, ranks, u.Start, u.End)})
	}
	slices.SortStableFunc(ranked, func(a, b unit) int { return a.rank - b.rank })
	order := make([]string, 0, len(blocks))
	for _, u := range ranked {
		for i := u.Start; i < u.End; i++ {
			order = append(order, blocks[i].ID)
		}
	}
	return order
}
