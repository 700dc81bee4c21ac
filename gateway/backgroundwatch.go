package gateway

// A background response whose end the app does not fetch through the
// gateway: a webhook tells the app, or it fetches the response from
// elsewhere. Its call would stay open for ever. With a managed OpenAI key
// the gateway asks the provider itself, now and then, how the response
// ended, and records that end as the call's outcome, as a fetch through
// the gateway would (see background.go). Without a managed key it has no
// key to ask with, and the call waits for a fetch through the gateway.

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/calls"
)

// DefaultBackgroundPoll is Config.BackgroundPoll's default.
const DefaultBackgroundPoll = 5 * time.Second

const (
	// maxBackgroundPoll is the longest wait between two asks.
	maxBackgroundPoll = 2 * time.Minute
	// backgroundWatchFor is how long a response is asked about: past it
	// the gateway gives up, says so, and the call waits for a fetch.
	backgroundWatchFor = 24 * time.Hour
	// maxWatched bounds the responses followed at once; past it a new
	// one is not followed (said in the log).
	maxWatched = 10000
	// backgroundAskTimeout bounds one ask.
	backgroundAskTimeout = 30 * time.Second
	// backgroundAsksAtOnce bounds the asks in flight together.
	backgroundAsksAtOnce = 8
)

// errResponseTooLarge: a fetched response larger than MaxBody.
var errResponseTooLarge = errors.New("the response is larger than --max-body")

// watchedResponse is one background response the gateway follows.
type watchedResponse struct {
	conv, id string
	include  []string
	account  http.Header // OpenAI-Organization, OpenAI-Project as the call sent them
	since    time.Time   // when its call was answered "queued"
	next     time.Time   // when to ask next
	delay    time.Duration
	// saved: kept in Config.Background under this gateway's instance.
	saved bool
	// asking: an ask about it is in flight.
	asking bool
}

// backgroundWatch holds the background responses the gateway follows;
// Run asks about them (followBackground).
type backgroundWatch struct {
	mu      sync.Mutex
	watched map[string]*watchedResponse // by response ID
	wake    chan struct{}
}

func newBackgroundWatch() *backgroundWatch {
	return &backgroundWatch{watched: map[string]*watchedResponse{}, wake: make(chan struct{}, 1)}
}

// add follows response id of conversation conv, queued at since, first
// asked after first, then after poll, doubling; false when maxWatched are
// followed already.
func (w *backgroundWatch) add(conv, id string, include []string, account http.Header, since time.Time, first, poll time.Duration) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.watched[id]; !ok && len(w.watched) >= maxWatched {
		return false
	}
	now := time.Now()
	// delay is what later doubles: never 0, or a response taken up at
	// once (first 0) would be asked about again and again.
	w.watched[id] = &watchedResponse{conv: conv, id: id, include: include, account: account, since: since, next: now.Add(first), delay: max(poll, time.Millisecond)}
	w.poke()
	return true
}

// follows reports whether response id is followed.
func (w *backgroundWatch) follows(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.watched[id]
	return ok
}

// unsaved returns the followed responses not yet kept beyond the process.
func (w *backgroundWatch) unsaved() []watchedResponse {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []watchedResponse
	for _, r := range w.watched {
		if !r.saved {
			out = append(out, *r)
		}
	}
	return out
}

// saved notes that response id is kept beyond the process; false when
// it is no longer followed.
func (w *backgroundWatch) saved(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	r, ok := w.watched[id]
	if ok {
		r.saved = true
	}
	return ok
}

// due returns the responses to ask about now, marked as being asked
// about until later or drop, and when the next one after them is due
// (zero: none is followed but those being asked about).
func (w *backgroundWatch) due(now time.Time) (due []watchedResponse, next time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, r := range w.watched {
		switch {
		case r.asking:
		case !r.next.After(now):
			r.asking = true
			due = append(due, *r)
		case next.IsZero() || r.next.Before(next):
			next = r.next
		}
	}
	return due, next
}

// later asks about response id again, after twice the last wait.
func (w *backgroundWatch) later(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if r, ok := w.watched[id]; ok {
		r.delay = min(2*r.delay, maxBackgroundPoll)
		r.next = time.Now().Add(r.delay)
		r.asking = false
	}
}

// poke wakes followBackground to look at what is due.
func (w *backgroundWatch) poke() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// drop stops following response id.
func (w *backgroundWatch) drop(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.watched, id)
}

// watchBackground follows background response id, which a call of
// conversation conv was answered "queued" with, when the gateway has a
// managed OpenAI key to ask with: asked for with the call's include list
// and in its organization and project (account). Run keeps it beyond
// the process (Config.Background), off the call's path.
func (g *Gateway) watchBackground(conv, id string, include []string, account http.Header, since time.Time) {
	if g.watch == nil || id == "" {
		return
	}
	if !g.watch.add(conv, id, include, account, since, g.cfg.BackgroundPoll, g.cfg.BackgroundPoll) {
		g.cfg.Logger.Warn("gateway: too many background responses followed; this one's call stays open until the app fetches it through the gateway",
			"conversation", conv, "response", id, "followed", maxWatched)
	}
}

// watchSpooled follows the background response that l, a call the spool
// kept while NATS was away and has now recorded in conversation conv, was
// answered "queued" with, as watchBackground does for a call recorded as
// it was made.
func (g *Gateway) watchSpooled(l *calls.Logged, conv string) {
	if g.watch == nil || l.API != calls.Responses || conv == "" {
		return
	}
	o := l.Outcome()
	if o.Failure != "" || o.Output == nil || !o.Output.Background {
		return
	}
	var req struct {
		Include []string `json:"include"`
	}
	_ = json.Unmarshal(l.Request, &req) // recorded unparsed: none
	g.watchBackground(conv, o.Output.ResponseID, req.Include, http.Header(l.Account), l.Time)
}

// followBackground asks about the followed background responses as they
// fall due, until ctx ends. With Config.Background it keeps them there,
// and, beside, now and then takes up those a stopped gateway followed
// (adoptBackground: asking whether a gateway runs waits a second for
// each that does, which holds up no ask).
func (g *Gateway) followBackground(ctx context.Context) {
	var asking sync.WaitGroup
	defer asking.Wait()
	if g.cfg.Background != nil {
		asking.Go(func() { g.adoptEvery(ctx) })
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	slots := make(chan struct{}, backgroundAsksAtOnce)
	for {
		if g.cfg.Background != nil {
			g.saveWatched(ctx)
		}
		due, next := g.watch.due(time.Now())
		for _, r := range due {
			// backgroundAsksAtOnce at a time: an ask the provider is
			// slow to answer (up to backgroundAskTimeout) holds up no
			// other response's.
			select {
			case slots <- struct{}{}:
			case <-ctx.Done():
				return
			}
			asking.Go(func() {
				defer g.watch.poke()
				defer func() { <-slots }()
				g.askBackground(ctx, r)
			})
		}
		wait := time.Hour
		if !next.IsZero() {
			wait = time.Until(next)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-g.watch.wake:
		case <-timer.C:
		}
	}
}

// askBackground asks the provider how response r ended (GET
// /responses/{id}, with the include list the call asked for) and, when it
// ended, records that as its call's outcome. A response still running, an
// answer that did not come, or an end that could not be stored is asked
// about again later; a refusal (404: the provider no longer has it; 401:
// the key) ends the following, said in the log.
func (g *Gateway) askBackground(ctx context.Context, r watchedResponse) {
	log := g.cfg.Logger.With("conversation", r.conv, "response", r.id)
	if time.Since(r.since) > backgroundWatchFor {
		g.stopFollowing(ctx, r)
		log.Warn("gateway: gave up asking how a background response ended; its call stays open until the app fetches it through the gateway", "after", backgroundWatchFor)
		return
	}
	actx, cancel := context.WithTimeout(ctx, backgroundAskTimeout)
	defer cancel()
	status, body, err := g.fetchResponse(actx, r)
	switch {
	case errors.Is(err, errResponseTooLarge):
		g.stopFollowing(ctx, r)
		log.Warn("gateway: a background response is larger than --max-body, too large to record; its call stays open", "max_body", g.cfg.MaxBody)
		return
	case err != nil || status == http.StatusTooManyRequests || status == http.StatusRequestTimeout || status/100 == 5:
		log.Debug("gateway: background response not told; asked again later", "status", status, "err", err)
		g.watch.later(r.id)
		return
	case status/100 != 2:
		g.stopFollowing(ctx, r)
		log.Warn("gateway: the provider refused to say how a background response ended; its call stays open until the app fetches it through the gateway", "status", status)
		return
	}
	out, err := calls.ParseResponse(calls.Responses, body)
	if err != nil || out.ResponseID != r.id {
		g.stopFollowing(ctx, r)
		log.Warn("gateway: the provider's answer about a background response is not that response; its call stays open until the app fetches it through the gateway", "err", err)
		return
	}
	if out.Background {
		g.watch.later(r.id) // still queued or running
		return
	}
	o := redactOutcome(calls.Outcome{Output: out, Duration: out.Took}, []string{g.cfg.OpenAIKey})
	conv, err := g.rec.recordBackgroundIn(ctx, r.conv, r.id, o)
	if err != nil {
		log.Warn("gateway: a background response's end could not be recorded; asked again later", "err", err)
		g.watch.later(r.id)
		return
	}
	g.stopFollowing(ctx, r)
	if conv != "" {
		log.Info("gateway: a background response's end recorded, as the gateway fetched it (the app did not fetch it through the gateway)")
	}
}

// fetchResponse gets response r from the OpenAI upstream with the
// managed key: the answer's status and body (up to MaxBody).
func (g *Gateway) fetchResponse(ctx context.Context, r watchedResponse) (int, []byte, error) {
	u := strings.TrimRight(g.cfg.OpenAIUpstream, "/") + "/responses/" + url.PathEscape(r.id)
	if len(r.include) > 0 {
		q := url.Values{"include[]": r.include}
		u += "?" + q.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	for k, v := range r.account {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+g.cfg.OpenAIKey)
	res, err := g.cfg.Transport.RoundTrip(req)
	if err != nil {
		return 0, nil, err
	}
	// As every answer the gateway records: the key, echoed, is masked.
	masked := maskKeys(res.Body, []string{g.cfg.OpenAIKey})
	defer masked.Close()
	body, err := io.ReadAll(io.LimitReader(masked, g.cfg.MaxBody+1))
	if err == nil && int64(len(body)) > g.cfg.MaxBody {
		err = errResponseTooLarge
	}
	return res.StatusCode, body, err
}

// openAIAccount is the OpenAI-Organization and OpenAI-Project headers of
// h, the organization and project of a key that has several; nil when it
// names neither.
func openAIAccount(h http.Header) http.Header {
	var out http.Header
	for _, k := range []string{"OpenAI-Organization", "OpenAI-Project"} {
		if v := h.Values(k); len(v) > 0 {
			if out == nil {
				out = http.Header{}
			}
			out[http.CanonicalHeaderKey(k)] = v
		}
	}
	return out
}
