package replay

import (
	"encoding/json"
	"fmt"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/projector"
)

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
	case events.BlockInserted:
		v.Block.ID = id(v.Block.ID)
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
		if isAside(v) {
			// Its system prompt is a block of its own input, not of the
			// conversation; its input blocks are the conversation's.
			v.InputBlocks = ids(v.InputBlocks)
		} else if v.SystemPromptID != "" {
			v.SystemPromptID = id(v.SystemPromptID)
		}
		return v
	case events.InferenceFinished:
		// The wire request is the engine's, and a re-run sends none: what
		// the engine rendered is checked by --verify and --wire instead.
		v.InferenceID, v.Duration, v.Wire = "", 0, events.Wire{}
		return v
	case events.InferenceFailed:
		v.InferenceID, v.Duration, v.Wire = "", 0, events.Wire{}
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
	if gp, ok := g.Payload.(events.InferenceStarted); ok {
		if wp := w.Payload.(events.InferenceStarted); gp.Purpose != wp.Purpose {
			return fmt.Sprintf("the log's model call is %s, the re-run's is %s", purposeOf(wp), purposeOf(gp))
		}
	}
	collect := func(p events.Payload) []string {
		var out []string
		Normalize(p, func(s string) string { out = append(out, s); return s })
		return out
	}
	gi, wi := collect(g.Payload), collect(w.Payload)
	if len(gi) != len(wi) {
		return fmt.Sprintf("the log's %s names %s, the re-run's %d", w.Type, plural.Count(len(wi), "block"), len(gi))
	}
	for i := range gi {
		if reason := b.bind(gi[i], wi[i]); reason != "" {
			return reason
		}
	}
	gp := g.Payload
	if wr, ok := w.Payload.(events.SystemPromptReplaced); ok && wr.PreviousSource == "" {
		if gr, ok := gp.(events.SystemPromptReplaced); ok {
			// A log written before the Tx filled PreviousSource in (its
			// writer left it out) has none: the source the prompt had is
			// the Turn's, which the events before compare.
			gr.PreviousSource = ""
			gp = gr
		}
	}
	gj, _ := json.Marshal(Normalize(gp, b.lookup))
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

// purposeOf says what a model call was for, for a difference's reason.
func purposeOf(p events.InferenceStarted) string {
	if p.Purpose == "" {
		return "the answer to the user"
	}
	return "for " + quote(p.Purpose)
}
