package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"

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
// for the request's next call of that tool with those arguments.
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
	built, err := p.BuildWithEngine(eng, slog.New(slog.DiscardHandler), tools)
	if err != nil {
		return nil, fmt.Errorf("rerun %s: build the profile: %w", conversation, err)
	}
	res := &RerunResult{Conversation: conversation}
	w := newWalker(conversation)
	for start := 0; start < len(recs); {
		end := start + 1
		for end < len(recs) && recs[end].Cause == recs[start].Cause {
			end++
		}
		seg := recs[start:end]
		if rerunnable(seg) {
			res.Requests++
			d, compared, err := rerunRequest(ctx, w.turn, seg, built, eng)
			if err != nil {
				return nil, fmt.Errorf("rerun %s: request %s: %w", conversation, seg[0].Cause, err)
			}
			res.Events += compared
			if d != nil {
				res.Difference = d
				return res, nil
			}
		} else {
			res.Skipped++
		}
		for i := range seg {
			if err := w.apply(&seg[i]); err != nil {
				return nil, fmt.Errorf("rerun %s: the log cannot be folded: %w", conversation, err)
			}
		}
		start = end
	}
	return res, nil
}

// rerunnable reports whether a group of events is a chat request a worker
// served: it starts with the worker appending the user's message.
func rerunnable(seg []eventlog.Record) bool {
	return seg[0].Actor == ActorWorker && seg[0].Type == events.TypeUserAppended && seg[0].Step == 0
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
	for i := len(inputs); i < len(seg); i++ {
		r := &seg[i]
		if r.Actor == ActorWorker {
			if r.Type == events.TypeRequestCompleted || r.Type == events.TypeRequestFailed {
				closing = r
			}
			continue
		}
		want = append(want, r)
	}

	model := built.Model
	for _, r := range want {
		if p, ok := r.Payload.(events.InferenceStarted); ok {
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

// canonicalEvents passes events through the codec, so that they are
// exactly what the log would hold (empty maps and lists as nil).
func canonicalEvents(evs []events.Event) ([]events.Event, error) {
	out := make([]events.Event, 0, len(evs))
	for _, e := range evs {
		data, err := events.Encode(e)
		if err != nil {
			return nil, fmt.Errorf("the re-run produced an event the log would refuse: %w", err)
		}
		dec, err := events.Decode(data)
		if err != nil {
			return nil, err
		}
		out = append(out, dec...)
	}
	return out, nil
}

// Normalize returns p as Rerun compares it. Two runs of the same chain on
// the same input legitimately differ in:
//   - block IDs minted during the run (engine.NewID for inserted system
//     prompts, summaries, tool results): each ID is passed through id, and
//     Rerun maps the re-run's IDs to the log's, requiring the mapping to
//     be one-to-one and IDs that existed before the request to be equal;
//   - inference IDs: dropped;
//   - input hashes (they hash block IDs too): dropped; Verify proves the
//     log's, and the Turn they hash is compared event by event;
//   - measured durations of model calls: dropped.
//
// Everything else is compared: type, actor, texts, metadata, trust, call
// IDs and tool names (replayed from the log), reasons, token counts and
// stop reasons (replayed too), models and system prompt hashes. Event IDs,
// times, schema versions, step numbers and message boundaries are not.
// id may be nil (IDs kept).
func Normalize(p events.Payload, id func(string) string) events.Payload {
	if id == nil {
		id = func(s string) string { return s }
	}
	ids := func(in []string) []string {
		if in == nil {
			return nil
		}
		out := make([]string, len(in))
		for i, s := range in {
			out[i] = id(s)
		}
		return out
	}
	blocks := func(in []events.Block) []events.Block {
		if in == nil {
			return nil
		}
		out := make([]events.Block, len(in))
		for i, b := range in {
			b.ID = id(b.ID)
			out[i] = b
		}
		return out
	}
	switch v := p.(type) {
	case events.ConversationStarted:
		v.Blocks = blocks(v.Blocks)
		return v
	case events.UserAppended:
		v.BlockID = id(v.BlockID)
		return v
	case events.SystemPromptSet:
		v.BlockID = id(v.BlockID)
		return v
	case events.SystemPromptReplaced:
		v.BlockID = id(v.BlockID)
		return v
	case events.SystemPromptLocked:
		v.BlockID = id(v.BlockID)
		return v
	case events.SystemPromptUnlocked:
		v.BlockID = id(v.BlockID)
		return v
	case events.ReasoningAppended:
		v.BlockID = id(v.BlockID)
		return v
	case events.LLMTextAppended:
		v.BlockID = id(v.BlockID)
		return v
	case events.ToolCalled:
		v.BlockID = id(v.BlockID)
		return v
	case events.ToolResult:
		v.BlockID = id(v.BlockID)
		return v
	case events.BlocksReordered:
		v.Order = ids(v.Order)
		return v
	case events.BlocksRemoved:
		v.BlockIDs = ids(v.BlockIDs)
		return v
	case events.BlockAnnotated:
		v.BlockID = id(v.BlockID)
		return v
	case events.BlockSplit:
		v.BlockID = id(v.BlockID)
		v.Into = blocks(v.Into)
		return v
	case events.TurnCompacted:
		v.Removed = ids(v.Removed)
		if v.Summary != nil {
			s := *v.Summary
			s.ID = id(s.ID)
			v.Summary = &s
		}
		return v
	case events.InferenceStarted:
		v.InferenceID, v.InputHash = "", ""
		if v.SystemPromptID != "" {
			v.SystemPromptID = id(v.SystemPromptID)
		}
		return v
	case events.InferenceFinished:
		v.InferenceID, v.Duration = "", 0
		return v
	case events.InferenceFailed:
		v.InferenceID, v.Duration = "", 0
		return v
	}
	return p
}

// binder maps the block IDs a re-run minted to the log's.
type binder struct {
	start     *projector.Turn
	fwd, back map[string]string
}

func newBinder(start *projector.Turn) *binder {
	return &binder{start: start, fwd: map[string]string{}, back: map[string]string{}}
}

func (b *binder) lookup(id string) string {
	if l, ok := b.fwd[id]; ok {
		return l
	}
	return id
}

// bind pairs a re-run ID with a log ID, or says why it cannot.
func (b *binder) bind(r, l string) string {
	if b.start.Index(r) >= 0 || b.start.Index(l) >= 0 {
		if r != l {
			return fmt.Sprintf("the re-run refers to block %s where the log refers to block %s", r, l)
		}
		return ""
	}
	if x, ok := b.fwd[r]; ok && x != l {
		return fmt.Sprintf("the re-run's block %s is the log's block %s, but here the log refers to %s", r, x, l)
	}
	if x, ok := b.back[l]; ok && x != r {
		return fmt.Sprintf("the log's block %s is the re-run's block %s, but here the re-run refers to %s", l, x, r)
	}
	b.fwd[r], b.back[l] = l, r
	return ""
}

// compare reports why the re-run's event g differs from the log's event w,
// or "" when they are the same after normalization.
func (b *binder) compare(g, w *events.Event) string {
	if g.Type != w.Type {
		return fmt.Sprintf("the log has %s, the re-run %s", w.Type, g.Type)
	}
	if g.Actor != w.Actor {
		return fmt.Sprintf("the log's %s is by %s, the re-run's by %s", w.Type, w.Actor, g.Actor)
	}
	collect := func(p events.Payload) []string {
		var out []string
		Normalize(p, func(s string) string { out = append(out, s); return s })
		return out
	}
	gi, wi := collect(g.Payload), collect(w.Payload)
	if len(gi) != len(wi) {
		return fmt.Sprintf("the log's %s names %d blocks, the re-run's %d", w.Type, len(wi), len(gi))
	}
	for i := range gi {
		if reason := b.bind(gi[i], wi[i]); reason != "" {
			return reason
		}
	}
	gj, _ := json.Marshal(Normalize(g.Payload, b.lookup))
	wj, _ := json.Marshal(Normalize(w.Payload, nil))
	if string(gj) != string(wj) {
		return fmt.Sprintf("the %s payloads differ", w.Type)
	}
	return ""
}

func view(e events.Event, id func(string) string) *EventView {
	data, _ := json.Marshal(Normalize(e.Payload, id))
	return &EventView{Type: e.Type, Actor: e.Actor, Step: e.Step, Payload: data}
}

// errNotRecorded marks a model call or tool call the log has no recorded
// answer for: the re-run asked for more than the original run did.
var errNotRecorded = errors.New("not recorded in the log")

// recordedCall is one model call of the request as the log recorded it.
type recordedCall struct {
	started  events.InferenceStarted
	blocks   []events.Block
	finished *events.InferenceFinished
	failed   *events.InferenceFailed
}

// replayEngine answers model calls with what the log recorded. arm points
// it at the next request.
type replayEngine struct {
	turn      *projector.Turn
	calls     []recordedCall
	next      int
	summaries []string
	nextSum   int
	results   []*recordedResult
}

type recordedResult struct {
	name, args string
	text       string
	isError    bool
	used       bool
}

func (e *replayEngine) arm(turn *projector.Turn, seg []eventlog.Record) {
	e.turn, e.calls, e.next, e.summaries, e.nextSum, e.results = turn, nil, 0, nil, 0, nil
	calls := map[string]events.ToolCalled{}
	for _, b := range turn.Blocks {
		if b.Kind == events.KindToolCall {
			calls[b.CallID] = events.ToolCalled{Name: b.ToolName, Arguments: b.Arguments}
		}
	}
	open := -1 // index in e.calls of the call whose output is being read
	for i := range seg {
		switch p := seg[i].Payload.(type) {
		case events.InferenceStarted:
			e.calls = append(e.calls, recordedCall{started: p})
			open = len(e.calls) - 1
		case events.InferenceFinished:
			if open >= 0 && e.calls[open].started.InferenceID == p.InferenceID {
				e.calls[open].finished = &p
			}
			open = -1
		case events.InferenceFailed:
			if open >= 0 && e.calls[open].started.InferenceID == p.InferenceID {
				e.calls[open].failed = &p
			}
			open = -1
		case events.ReasoningAppended:
			if open >= 0 {
				e.calls[open].blocks = append(e.calls[open].blocks, events.Block{ID: p.BlockID, Kind: events.KindReasoning, Text: p.Text, Encrypted: p.Encrypted, Meta: p.Meta})
			}
		case events.LLMTextAppended:
			if open >= 0 {
				e.calls[open].blocks = append(e.calls[open].blocks, events.Block{ID: p.BlockID, Kind: events.KindLLMText, Text: p.Text, Meta: p.Meta})
			}
		case events.ToolCalled:
			calls[p.CallID] = p
			if open >= 0 {
				e.calls[open].blocks = append(e.calls[open].blocks, events.Block{ID: p.BlockID, Kind: events.KindToolCall, CallID: p.CallID, ToolName: p.Name, Arguments: p.Arguments, Meta: p.Meta})
			}
		case events.ToolResult:
			c := calls[p.CallID]
			e.results = append(e.results, &recordedResult{name: c.Name, args: c.Arguments, text: p.Text, isError: p.IsError})
		case events.TurnCompacted:
			if p.Summary != nil {
				e.summaries = append(e.summaries, p.Summary.Text)
			}
		}
	}
}

// Infer implements engine.Engine.
func (e *replayEngine) Infer(ctx context.Context, in engine.Input, _ func(engine.Delta)) (engine.Output, error) {
	if err := ctx.Err(); err != nil {
		return engine.Output{}, err
	}
	if in.Turn != e.turn {
		// Not the conversation's Turn: the compaction summarizer's call.
		if e.nextSum >= len(e.summaries) {
			return engine.Output{}, fmt.Errorf("summary %d of the request: %w", e.nextSum+1, errNotRecorded)
		}
		s := e.summaries[e.nextSum]
		e.nextSum++
		return engine.Output{Blocks: []events.Block{{Kind: events.KindLLMText, Text: s}}}, nil
	}
	if e.next >= len(e.calls) {
		return engine.Output{}, fmt.Errorf("model call %d of the request: %w (it made %d)", e.next+1, errNotRecorded, len(e.calls))
	}
	c := e.calls[e.next]
	e.next++
	switch {
	case c.failed != nil:
		err := errors.New(c.failed.Error)
		if c.failed.Transient {
			err = engine.Transient(err)
		}
		return engine.Output{}, err
	case c.finished == nil:
		return engine.Output{}, fmt.Errorf("model call %d of the request has no recorded end: %w", e.next, errNotRecorded)
	}
	out := engine.Output{StopReason: c.finished.StopReason,
		Usage: engine.Usage{PromptTokens: c.finished.PromptTokens, CompletionTokens: c.finished.CompletionTokens}}
	for _, b := range c.blocks {
		out.Blocks = append(out.Blocks, b.Clone())
	}
	return out, nil
}

// replayTools is a registry with every tool the conversation called, each
// answering with the result the log recorded for the current request's
// next unused call of that tool with the same arguments.
func replayTools(recs []eventlog.Record, eng *replayEngine) (*engine.Tools, error) {
	seen := map[string]bool{}
	var tools []engine.Tool
	for i := range recs {
		p, ok := recs[i].Payload.(events.ToolCalled)
		if !ok || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		name := p.Name
		tools = append(tools, engine.Tool{
			Spec: engine.ToolSpec{Name: name, Description: "replays the results the log recorded"},
			Func: func(_ context.Context, args json.RawMessage) (string, error) {
				for _, r := range eng.results {
					if r.used || r.name != name || !sameArgs(r.args, string(args)) {
						continue
					}
					r.used = true
					if r.isError {
						return "", errors.New(strings.TrimPrefix(r.text, "error: "))
					}
					return r.text, nil
				}
				return "", fmt.Errorf("replay: a result for %s(%s): %w", name, args, errNotRecorded)
			},
		})
	}
	return engine.NewTools(tools...)
}

// sameArgs compares tool arguments as engine.Tools passes them: empty
// arguments arrive as {}.
func sameArgs(recorded, got string) bool {
	if strings.TrimSpace(recorded) == "" {
		recorded = "{}"
	}
	return recorded == got
}
