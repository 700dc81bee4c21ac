package gateway

import (
	"context"
	"net/http"
	"time"

	"github.com/turnlog/turnlog/calls"
)

// state is one call in flight, carried by its request's context.
type state struct {
	api       calls.API
	anthropic bool
	pending   *Pending
	started   time.Time
	tee       *tee
	// spooled is set instead of pending when NATS was away and the call
	// goes to the spool (--record-optional).
	spooled *spoolCall
	// upstream is the time from sending the call upstream to the
	// upstream's last byte (set by timedTransport and the tee).
	upstreamStart time.Time
	upstream      time.Duration
	// secrets are the credentials the call sends upstream (the managed
	// provider key, or the client's own): an upstream that echoes one in
	// its error (some OpenAI-compatible servers do) does not get it into
	// the record.
	secrets []string
	// account is the request's OpenAI-Organization and OpenAI-Project
	// headers: which of the key's organizations and projects the call
	// was made in, where a background response it queued is to be asked
	// for (backgroundwatch.go).
	account http.Header
}

type stateKey struct{}

func stateOf(ctx context.Context) *state {
	s, _ := ctx.Value(stateKey{}).(*state)
	return s
}

// conversation is the call's conversation, for its response's header.
func (st *state) conversation() string {
	if st.pending != nil {
		return st.pending.Conversation()
	}
	return st.spooled.Conversation
}

// parsed reports whether the call's request was read (its response is
// then read too).
func (st *state) parsed() bool {
	if st.pending != nil {
		return st.pending.Parsed()
	}
	return st.spooled.req != nil
}

func (st *state) done() bool {
	if st.pending != nil {
		return st.pending.finished
	}
	return st.spooled.finished
}

// finish records the call's outcome, or keeps it in the spool, and
// returns once it is durable.
func (st *state) finish(ctx context.Context, g *Gateway, o calls.Outcome) error {
	if st.upstream == 0 && !st.upstreamStart.IsZero() {
		st.upstream = time.Since(st.upstreamStart)
	}
	if o.Duration == 0 {
		// A live call's latency is known: from its arrival to its end
		// (an upstream that never answered, a proxy that gave up).
		o.Duration = time.Since(st.started)
	}
	o = redactOutcome(o, st.secrets)
	if st.pending != nil {
		if err := g.rec.Finish(ctx, st.pending, o); err != nil {
			return err
		}
		if st.api == calls.Responses && o.Failure == "" && o.Output != nil && o.Output.Background && st.pending.Parsed() {
			// Queued: its end is asked for, should the app not fetch it
			// through the gateway.
			g.watchBackground(st.pending.Conversation(), o.Output.ResponseID, st.pending.call.Request.Include(), st.account, time.Now())
		}
		return nil
	}
	return g.spool.keep(st.spooled, o, st.tee, g.local)
}
