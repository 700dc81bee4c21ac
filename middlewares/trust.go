package middlewares

import (
	"context"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// ActorTrust is the actor of Trust's events.
const ActorTrust = "trust"

// Trust metadata keys and values.
const (
	// MetaTrustOperator on a user, model or tool block marked trusted
	// names the operator component that vouches for it (an import, a
	// seeded example, Roles). Without it such a block is not trusted,
	// whatever its Trust field says.
	MetaTrustOperator = "trust.operator"
	// MetaTrustUnvouched is set to "true" by Trust on a block that claims
	// trust nobody vouched for.
	MetaTrustUnvouched = "trust.unvouched"
	// MetaTrustFlag flags untrusted text that tried something only
	// trusted text may do; Roles sets it to FlagRoleMarker.
	MetaTrustFlag = "trust.flag"
	// FlagRoleMarker is MetaTrustFlag's value for untrusted text that
	// contains role markers ("System:" at a line start).
	FlagRoleMarker = "role_marker"
)

// IsTrusted reports whether b's text may act as instructions (role markers
// and the like): it is marked events.Trusted and, unless it is a system or
// other block, carries MetaTrustOperator. Text from users, models and
// tools arrives untrusted (the zero value); the operator rule stops a
// trusted flag that slipped in through an import, a fork or a caller that
// set UserAppended.Trust from being honoured without a name behind it.
//
// Trust is per span: even in a trusted block, the ranges b.Untrusted lists
// (what template variables filled in) are data. Whatever honours trusted
// text must skip them, as Roles does; IsTrusted alone says only that the
// rest of the text is the operator's.
func IsTrusted(b events.Block) bool {
	if b.Trust != events.Trusted {
		return false
	}
	switch b.Kind {
	case events.KindSystem, events.KindOther:
		return true
	}
	return b.Meta[MetaTrustOperator] != ""
}

// TrustConfig configures Trust; it has no settings yet.
type TrustConfig struct{}

// Validate reports the first setting that cannot work; there is none.
func (c TrustConfig) Validate() error { return nil }

// Trust makes unearned trust visible in the log. Use it where blocks can
// enter a conversation with their Trust field set by someone other than
// the operator's own middlewares: forks and imports (conversation.started
// carries whole blocks), or workers that pass a client's trust flag on.
//
// What it guarantees: after it ran, every user, llm_text, reasoning,
// tool_call or tool_result block that is marked trusted without
// MetaTrustOperator carries trust.unvouched="true" (block.annotated, once,
// with the reason). It cannot lower the Trust field itself (no event
// changes trust), and it need not: IsTrusted, which Roles and anything
// else that honours instructions must use, already treats such a block as
// untrusted. Trust adds the record of it. System and other blocks are
// trusted as marked; a block without a claim is left alone. Blocks that
// are fine get no event.
func Trust(cfg TrustConfig) (engine.Middleware, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return func(next engine.Handler) engine.Handler {
		return func(ctx context.Context, tx *engine.Tx) error {
			if err := flagUnvouched(tx); err != nil {
				return err
			}
			return next(ctx, tx)
		}
	}, nil
}

// flagUnvouched runs over every block before every model call, and few
// blocks claim trust: the loop only compares each block's Trust, and the
// rest of the check is out of line.
func flagUnvouched(tx *engine.Tx) error {
	blocks := tx.Turn().Blocks
	for i := range blocks {
		if blocks[i].Trust != events.Trusted {
			continue
		}
		if err := flagIfUnvouched(tx, &blocks[i]); err != nil {
			return err
		}
	}
	return nil
}

// flagIfUnvouched flags b, which is marked trusted, if nobody vouched for
// it and it is not flagged yet.
func flagIfUnvouched(tx *engine.Tx, b *events.Block) error {
	if IsTrusted(*b) || b.Meta[MetaTrustUnvouched] != "" {
		return nil
	}
	return tx.Emit(ActorTrust, events.BlockAnnotated{
		BlockID: b.ID,
		Meta:    map[string]string{MetaTrustUnvouched: "true"},
		Reason:  "a " + string(b.Kind) + " block marked trusted without " + MetaTrustOperator + " metadata; treated as untrusted",
	})
}
