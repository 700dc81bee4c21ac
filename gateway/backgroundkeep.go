package gateway

// The background responses a gateway follows, kept beyond its process
// (Config.Background): a gateway that restarts, or another gateway of the
// installation, goes on asking about those a stopped gateway followed, so
// their calls are not left open for ever (see backgroundwatch.go).

import (
	"context"
	"net/http"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// BackgroundStore keeps the background responses a gateway asks the
// provider about beyond its process (Config.Background): implemented by
// *eventlog.BackgroundResponses.
type BackgroundStore interface {
	Put(ctx context.Context, r eventlog.BackgroundResponse) error
	Delete(ctx context.Context, conv, id string) error
	Each(ctx context.Context, fn func(eventlog.BackgroundResponse, error) bool) error
}

// adoptEvery takes up the responses of stopped gateways
// (adoptBackground) when Run starts and then every 2 minutes, sooner
// with a short BackgroundPoll (every 24 polls), until ctx ends.
func (g *Gateway) adoptEvery(ctx context.Context) {
	every := min(maxBackgroundPoll, 24*g.cfg.BackgroundPoll)
	for {
		g.adoptBackground(ctx)
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

// saveWatched keeps the followed responses not yet kept in
// Config.Background, under this gateway's instance. One that cannot be
// kept is tried again on the next round (said in the log): until then a
// restart would forget it.
func (g *Gateway) saveWatched(ctx context.Context) {
	for _, r := range g.watch.unsaved() {
		sctx, cancel := context.WithTimeout(ctx, backgroundAskTimeout)
		err := g.cfg.Background.Put(sctx, eventlog.BackgroundResponse{
			Conversation: r.conv, ResponseID: r.id, Include: r.include, Account: r.account, Since: r.since, Instance: g.rec.instance,
		})
		cancel()
		if err != nil {
			g.cfg.Logger.Warn("gateway: a background response followed is not kept beyond this process yet (tried again shortly); a restart before then forgets it",
				"conversation", r.conv, "response", r.id, "err", err)
			return
		}
		if !g.watch.saved(r.id) {
			// Its end came meanwhile (an ask in flight), and its entry
			// was dropped before this put: drop it again.
			g.stopFollowing(ctx, r)
		}
	}
}

// adoptBackground follows the responses in Config.Background that no
// running gateway follows: those of a gateway that stopped (a restart, a
// crash, a scale-down), asked about from now on by this one. An entry
// another client wrote is said in the log once and left alone.
func (g *Gateway) adoptBackground(ctx context.Context) {
	lv, _ := g.cfg.Log.(liveness)
	alive := map[string]bool{} // by instance, asked once a round
	err := g.cfg.Background.Each(ctx, func(e eventlog.BackgroundResponse, err error) bool {
		if err != nil {
			if _, told := g.badEntries.LoadOrStore(e.ResponseID, true); !told {
				g.cfg.Logger.Warn("gateway: an entry of the background responses is not one a gateway wrote; left alone", "err", err)
			}
			return true
		}
		if g.watch.follows(e.ResponseID) {
			return true
		}
		if e.Instance != "" && e.Instance != g.rec.instance {
			running, asked := alive[e.Instance]
			if !asked {
				running = true // unknown: left to it
				if lv != nil {
					var aerr error
					if running, aerr = lv.Alive(ctx, e.Instance); aerr != nil {
						running = true
						g.cfg.Logger.Debug("gateway: could not ask whether a gateway runs; its background responses are left to it", "instance", e.Instance, "err", aerr)
					}
				}
				alive[e.Instance] = running
			}
			if running {
				return true
			}
		}
		if g.watch.add(e.Conversation, e.ResponseID, e.Include, http.Header(e.Account), e.Since, 0, g.cfg.BackgroundPoll) {
			g.cfg.Logger.Info("gateway: asking how a background response ended, which a stopped gateway followed",
				"conversation", e.Conversation, "response", e.ResponseID, "stopped", e.Instance)
		}
		return true
	})
	if err != nil && ctx.Err() == nil {
		g.cfg.Logger.Warn("gateway: could not read the background responses of stopped gateways; read again later", "err", err)
	}
}

// stopFollowing stops following response r, here and in
// Config.Background.
func (g *Gateway) stopFollowing(ctx context.Context, r watchedResponse) {
	g.watch.drop(r.id)
	if g.cfg.Background == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), backgroundAskTimeout)
	defer cancel()
	if err := g.cfg.Background.Delete(dctx, r.conv, r.id); err != nil {
		g.cfg.Logger.Warn("gateway: a background response no longer followed is still listed; a gateway may ask about it again (it records nothing twice)",
			"conversation", r.conv, "response", r.id, "err", err)
	}
}
