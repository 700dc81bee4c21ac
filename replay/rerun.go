package replay

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/projector"
)

// ActorWorker is the actor of the events a worker records itself for a
// chat request (the user's message, request data, request.completed and
// request.failed); it equals worker.ActorWorker, which replay does not
// import so as not to depend on the worker's runtime. Rerun takes these
// events as the request's inputs and outcome.
const ActorWorker = "worker"

// RerunResult is the result of Rerun. Its JSON form is the stable output
// of `turnlog replay --rerun -o json`.
type RerunResult struct {
	Conversation string `json:"conversation"`
	// Requests counts the chat requests re-executed; Skipped the groups of
	// events taken as recorded because no middleware chain produced them
	// (imports, forks, operator events, requests refused before their
	// first step).
	Requests int `json:"requests"`
	Skipped  int `json:"skipped"`
	// Events counts the log events compared with re-executed ones.
	Events int `json:"events"`
	// Difference is the first point where the re-run differs from the
	// log, null when it never does.
	Difference *Difference `json:"difference"`
	// Profiles counts the requests re-run with each profile, by name,
	// when each re-ran with the profile that served it
	// (WithRequestProfiles); omitted otherwise.
	Profiles map[string]int `json:"profiles,omitempty"`
	// Notes say what the re-run did without that a reader should know,
	// e.g. the profile's provider, which this binary does not register
	// and the re-run does not need; omitted when none.
	Notes []string `json:"notes,omitempty"`
}

// OK reports whether the re-run reproduced the log.
func (r *RerunResult) OK() bool { return r.Difference == nil }

// Difference is the first point where a re-run parts from the log.
type Difference struct {
	// Request is the cause (request ID) of the request that differs.
	Request string `json:"request"`
	// N and Seq locate the log's event at that point: the first event that
	// differs, or the request's closing event when the re-run produced
	// more events or ended differently.
	N   int    `json:"n"`
	Seq uint64 `json:"seq"`
	// Reason says what differs, in one line.
	Reason string `json:"reason"`
	// Log is the log's event there and Rerun the re-run's, both
	// normalized (see Normalize); null when that side has no event there.
	Log   *EventView `json:"log"`
	Rerun *EventView `json:"rerun"`
	// RerunError is the error the re-run's chain returned, if any.
	RerunError string `json:"rerun_error,omitempty"`
}

// EventView is an event as Rerun compares it.
type EventView struct {
	Type  events.Type `json:"type"`
	Actor string      `json:"actor"`
	Step  int         `json:"step"`
	// Payload is the normalized payload (see Normalize).
	Payload json.RawMessage `json:"payload"`
}

// Rerun re-executes a conversation's recorded chat requests through
// today's middleware chain (the profile p, as a worker would build it) in
// memory, and reports the first point where the events it produces differ
// from the log. Nothing is written anywhere.
//
// The model is not called: an engine replays, for the k-th model call of
// a request, the blocks (with their IDs), usage and stop reason the log
// recorded after that request's k-th inference.started, or its recorded
// failure; the compaction summarizer gets the summary the log recorded.
// Tools are not run either: a tool call gets the result the log recorded
// for the request's next call of that tool with those arguments. Nor are
// templates read or variables resolved today: the template middleware
// renders the template text and the variable values the log recorded for
// the request (see recordedPrompts), so a `template set` since, or a
// template that reads the clock or a file, is no difference; today's
// rendering code is what runs.
//
// Each request starts from the Turn the log had before it, and its inputs
// (the worker's user.appended and data.set, and the model its first
// recorded model call asked for, since a request may override the
// profile's) are taken from the log; the
// events of actor "worker" are not compared, the request's outcome
// (request.completed or request.failed) is. Groups of events that do not
// start with a worker's user.appended (imports, forks, operator events)
// are taken as recorded. A request the log holds only in part (interrupted,
// or in flight) is compared as far as the log goes.
//
// Events are compared after Normalize: same type, actor and payload, with
// IDs and measurements that legitimately differ between runs left out.
func Rerun(ctx context.Context, src Source, conversation string, p profile.Profile, opts ...Option) (*RerunResult, error) {
	o := collect(opts)
	var recs []eventlog.Record
	if _, _, err := read(ctx, src, conversation, o, func(_ *walker, r *eventlog.Record) error {
		recs = append(recs, *r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("rerun %s: %w", conversation, err)
	}
	eng := &replayEngine{}
	tools, err := replayTools(recs, eng)
	if err != nil {
		return nil, fmt.Errorf("rerun %s: %w", conversation, err)
	}
	chains := &rerunChains{recs: recs, eng: eng, tools: tools, given: p, set: o.profiles, name: o.profileName,
		built: map[string]*rerunChain{}, requests: map[string]int{}}
	res := &RerunResult{Conversation: conversation}
	appCalls := 0 // model calls an app made through the recording gateway
	w := newWalker(conversation)
	for start := 0; start < len(recs); {
		end := start + 1
		for end < len(recs) && recs[end].Cause == recs[start].Cause {
			end++
		}
		seg := recs[start:end]
		if rerunnable(seg) {
			res.Requests++
			ch, err := chains.chain(seg, recs[start:])
			if err != nil {
				return nil, fmt.Errorf("rerun %s: %w", conversation, err)
			}
			ch.prompts.arm(seg)
			d, compared, err := rerunRequest(ctx, w.turn, seg, ch.built, eng)
			if err != nil {
				return nil, fmt.Errorf("rerun %s: request %s: %w", conversation, seg[0].Cause, err)
			}
			res.Events += compared
			if d != nil {
				res.Difference = d
				res.Notes = append(chains.notes, res.Notes...)
				res.Profiles = chains.profileCounts()
				return res, nil
			}
		} else {
			res.Skipped++
			for i := range seg {
				if p, ok := seg[i].Payload.(events.InferenceStarted); ok && p.Gateway != nil {
					appCalls++
				}
			}
		}
		for i := range seg {
			if err := w.apply(&seg[i]); err != nil {
				return nil, fmt.Errorf("rerun %s: the log cannot be folded: %w", conversation, err)
			}
		}
		start = end
	}
	res.Notes = append(chains.notes, res.Notes...)
	res.Profiles = chains.profileCounts()
	if appCalls > 0 {
		// An app's call through the gateway is not a request a worker
		// served: say why it was not re-run.
		note := "1 model call was an app's, recorded by the recording gateway: no middleware chain made it, so --rerun has nothing of it to re-run; replay --verify proves its input and replay --check checks it"
		if appCalls > 1 {
			note = fmt.Sprintf("%d model calls were apps', recorded by the recording gateway: no middleware chain made them, so --rerun has nothing of them to re-run; replay --verify proves their inputs and replay --check checks them", appCalls)
		}
		res.Notes = append(res.Notes, note)
	}
	return res, nil
}

// rerunnable reports whether a group of events is a chat request a worker
// served: it starts with the worker appending the user's message.
func rerunnable(seg []eventlog.Record) bool {
	return seg[0].Actor == ActorWorker && seg[0].Type == events.TypeUserAppended && seg[0].Step == 0
}

// interruptedCalls are the model calls of a request that a crash
// interrupted: the worker resuming the request closed them (an
// inference.failed of its own) and made them again.
func interruptedCalls(seg []eventlog.Record) map[string]bool {
	ids := map[string]bool{}
	for i := range seg {
		if p, ok := seg[i].Payload.(events.InferenceFailed); ok && seg[i].Actor == ActorWorker {
			ids[p.InferenceID] = true
		}
	}
	return ids
}

// isInput reports whether a request's event is one of its inputs: what the
// worker records from the request before the chain runs.
func isInput(r *eventlog.Record) bool {
	return r.Actor == ActorWorker && r.Step == 0 && (r.Type == events.TypeUserAppended || r.Type == events.TypeDataSet)
}

// rerunRequest re-executes one request from the Turn start (the log's
// Turn before it; not changed) and compares. It returns the first
// difference, if any, and how many log events it compared.
func rerunRequest(ctx context.Context, start *projector.Turn, seg []eventlog.Record, built *profile.Built, eng *replayEngine) (*Difference, int, error) {
	var inputs []*eventlog.Record
	for i := range seg {
		if !isInput(&seg[i]) {
			break
		}
		inputs = append(inputs, &seg[i])
	}
	var want []*eventlog.Record // the events the chain produced, as the log has them
	var closing *eventlog.Record
	interrupted := interruptedCalls(seg)
	for i := len(inputs); i < len(seg); i++ {
		r := &seg[i]
		if r.Actor == ActorWorker {
			if r.Type == events.TypeRequestCompleted || r.Type == events.TypeRequestFailed {
				closing = r
			}
			continue
		}
		if p, ok := r.Payload.(events.InferenceStarted); ok && interrupted[p.InferenceID] {
			continue // made again after a crash: the chain made it once
		}
		want = append(want, r)
	}

	model := built.Model
	for _, r := range want {
		if p, ok := r.Payload.(events.InferenceStarted); ok && !isAside(p) {
			model = p.Model
			break
		}
	}
	tx := engine.NewTx(start.Clone(), seg[0].Cause, engine.WithModel(model), engine.WithTools(built.Tools.Specs()...))
	eng.arm(tx.Turn(), seg)
	for _, r := range inputs {
		if err := tx.Emit(r.Actor, r.Payload); err != nil {
			return nil, 0, fmt.Errorf("the request's own input does not apply: %w", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return nil, 0, err
	}
	runErr := built.Loop.Run(ctx, tx)
	if ctx.Err() != nil {
		return nil, 0, ctx.Err()
	}
	got, err := canonicalEvents(tx.Committed()[len(inputs):])
	if err != nil {
		return nil, 0, err
	}

	b := newBinder(start)
	diff := func(r *eventlog.Record, reason string, g *events.Event) *Difference {
		d := &Difference{Request: seg[0].Cause, Reason: reason}
		if r != nil {
			d.N, d.Seq = r.Pos, r.Seq
			d.Log = view(r.Event, nil)
		}
		if g != nil {
			d.Rerun = view(*g, b.lookup)
		}
		if runErr != nil {
			d.RerunError = runErr.Error()
		}
		return d
	}
	compared := 0
	for k := 0; k < min(len(got), len(want)); k++ {
		if reason := b.compare(&got[k], &want[k].Event); reason != "" {
			return diff(want[k], reason, &got[k]), compared, nil
		}
		compared++
	}
	switch {
	case len(got) < len(want):
		reason := "the re-run produced no event here"
		if runErr != nil {
			reason = "the re-run stopped here: " + runErr.Error()
		}
		return diff(want[len(got)], reason, nil), compared, nil
	case closing == nil:
		// The log holds the request only in part: it agrees as far as it
		// goes.
		return nil, compared, nil
	case len(got) > len(want):
		return diff(closing, "the re-run produced more events than the log has for this request", &got[len(want)]), compared, nil
	}
	failed, _ := closing.Payload.(events.RequestFailed)
	switch {
	case closing.Type == events.TypeRequestCompleted && runErr != nil:
		return diff(closing, "the log completed the request, the re-run failed: "+runErr.Error(), nil), compared, nil
	case closing.Type == events.TypeRequestFailed && runErr == nil:
		return diff(closing, "the log recorded request.failed ("+failed.Reason+"), the re-run completed", nil), compared, nil
	}
	return nil, compared, nil
}
