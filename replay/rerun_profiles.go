package replay

import (
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
)

// WithRequestProfiles has Rerun re-run each request with the profile that
// served it, as its outcome names it (request.completed's or
// request.failed's Profile), taken from set: a conversation served by
// another profile than the default, or by several, re-runs the chains that
// ran. The profile Rerun is given, whose name is name, re-runs the
// requests whose outcome names none (recorded before workers named it, or
// failed before a profile was chosen). A request naming a profile that set
// lacks ends the re-run with an error naming it.
func WithRequestProfiles(set profile.Set, name string) Option {
	return func(o *options) { o.profiles, o.profileName = set, name }
}

// rerunChain is a profile's chain as Rerun runs it: built once, on the
// replaying engine and tools, with the templates the log recorded.
type rerunChain struct {
	built   *profile.Built
	prompts *recordedPrompts
}

// rerunChains builds the chains of the profiles a conversation's requests
// ran with, each once, as the requests come.
type rerunChains struct {
	recs     []eventlog.Record
	eng      *replayEngine
	tools    *engine.Tools
	given    profile.Profile
	set      profile.Set // nil: every request re-runs with given
	name     string      // given's name, when set is not nil
	built    map[string]*rerunChain
	notes    []string
	requests map[string]int // requests re-run, by profile name
}

// servedBy is the profile the outcome of request cause names, "" if
// none: the first request.completed or request.failed of it in rest, the
// log from the request's first event on. The outcome may stand after
// other events than the request's: a request an app took over ends after
// the app's step, in a group of events of its own.
func servedBy(cause string, rest []eventlog.Record) string {
	for i := range rest {
		if rest[i].Cause != cause || rest[i].Actor != ActorWorker {
			continue
		}
		switch p := rest[i].Payload.(type) {
		case events.RequestCompleted:
			return p.Profile
		case events.RequestFailed:
			return p.Profile
		}
	}
	return ""
}

// chain returns the chain request seg re-runs with; rest is the log from
// seg's first event on.
func (c *rerunChains) chain(seg, rest []eventlog.Record) (*rerunChain, error) {
	name, p := "", c.given
	if c.set != nil {
		name = c.name
		if served := servedBy(seg[0].Cause, rest); served != "" {
			q, ok := c.set[served]
			if !ok {
				return nil, fmt.Errorf("request %s ran with profile %q, which the profiles given lack (they are %v): pass the profiles file the workers ran (--profiles FILE), or --profile NAME to re-run every request with one profile",
					seg[0].Cause, served, c.set.Names())
			}
			name, p = served, q
		}
		c.requests[name]++
	}
	if ch, ok := c.built[name]; ok {
		return ch, nil
	}
	prompts := newRecordedPrompts(c.recs, p.TemplateSource())
	p.Templates, p.Resolve = prompts, prompts.resolve
	built, err := p.BuildWithEngine(c.eng, slog.New(slog.DiscardHandler), c.tools)
	if err != nil {
		if name != "" {
			return nil, fmt.Errorf("build the profile %q: %w", name, err)
		}
		return nil, fmt.Errorf("build the profile: %w", err)
	}
	// The model is replayed, so the profile's engine need not be in this
	// binary (profile.ChainOnly reads such a profile): say so, since a
	// reader may expect the engine to have run.
	if prov := p.ProviderName(); !slices.Contains(profile.Engines(), prov) {
		note := fmt.Sprintf("provider %q is not registered in this binary; the re-run does not need it, since it replays the model's recorded outputs", prov)
		if !slices.Contains(c.notes, note) {
			c.notes = append(c.notes, note)
		}
	}
	ch := &rerunChain{built: built, prompts: prompts}
	c.built[name] = ch
	return ch, nil
}

// profileCounts is RerunResult.Profiles: nil unless requests re-ran with
// the profiles that served them.
func (c *rerunChains) profileCounts() map[string]int {
	if c.set == nil || len(c.requests) == 0 {
		return nil
	}
	return c.requests
}

// profileNames are the names of counts, sorted.
func profileNames(counts map[string]int) []string {
	names := make([]string, 0, len(counts))
	for n := range counts {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
