package gateway

import (
	"context"
	"net/url"
	"os"
	"time"

	"github.com/turnlog/turnlog/eventlog"
)

// presenceLog is the part of *eventlog.Log where running gateways say so
// (turnlog status lists them).
type presenceLog interface {
	Gateways(ctx context.Context) (*eventlog.Gateways, error)
}

// sayRunning writes the gateway's entry among the running gateways now
// and every eventlog.GatewayBeat until ctx ends, then removes it. A write
// that fails is logged once and tried again at the next beat: NATS away
// stops no call, and status then lists the gateway as not seen lately.
func (g *Gateway) sayRunning(ctx context.Context) {
	pl, ok := g.cfg.Log.(presenceLog)
	if !ok || g.rec.instance == "" {
		return
	}
	p := g.presence()
	var list *eventlog.Gateways
	failing := false
	beat := func() {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		var err error
		if list == nil {
			list, err = pl.Gateways(wctx)
		}
		if err == nil {
			p.Seen = time.Now().UTC()
			err = list.Put(wctx, p)
		}
		if err != nil && !failing && ctx.Err() == nil {
			g.cfg.Logger.Warn("gateway: could not say it runs (turnlog status lists it as not seen lately); trying again", "err", err)
		}
		failing = err != nil
	}
	beat()
	t := time.NewTicker(eventlog.GatewayBeat)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if list != nil {
				dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
				_ = list.Delete(dctx, p.Instance)
				cancel()
			}
			return
		case <-t.C:
			beat()
		}
	}
}

// presence is what the gateway says of itself: no credential (a base
// URL's user and password are left out) and nothing of any call.
func (g *Gateway) presence() eventlog.GatewayPresence {
	host, _ := os.Hostname()
	p := eventlog.GatewayPresence{Instance: g.rec.instance, Listen: g.cfg.Listen, Host: host, PID: os.Getpid(),
		RecordOptional: g.cfg.RecordOptional, Started: time.Now().UTC(),
		Upstreams: map[string]string{"openai": withoutUser(g.cfg.OpenAIUpstream), "anthropic": withoutUser(g.cfg.AnthropicUpstream)}}
	if g.cfg.OpenAIKey != "" {
		p.Managed = append(p.Managed, "openai")
	}
	if g.cfg.AnthropicKey != "" {
		p.Managed = append(p.Managed, "anthropic")
	}
	return p
}

// withoutUser is base URL u without its user information (a password
// written into it) and its query.
func withoutUser(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return ""
	}
	parsed.User, parsed.RawQuery, parsed.Fragment = nil, "", ""
	return parsed.String()
}
