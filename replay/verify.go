package replay

import (
	"context"
	"errors"
	"fmt"
	"github.com/turnlog/turnlog/calls"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"sync"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/projector"
)

// Verification is the result of Verify. Its JSON form is the stable output
// of `turnlog replay --verify -o json`.
type Verification struct {
	Conversation string `json:"conversation"`
	// Events and Inferences count what was checked.
	Events     int `json:"events"`
	Inferences int `json:"inferences"`
	// Wires counts the recorded wire requests rendered again and checked
	// against their hash (with WithWire); WiresUnchecked those of a
	// rendering the renderer does not know (another engine's, a newer
	// turnlog's), named in UncheckedRenderings.
	Wires               int      `json:"wires"`
	WiresUnchecked      int      `json:"wires_unchecked,omitempty"`
	UncheckedRenderings []string `json:"unchecked_renderings,omitempty"`
	// Unparsed counts the gateway calls whose request the gateway could
	// not read (not JSON, or not its API's shape): each is recorded by the
	// SHA-256 of its bytes alone, so there is no input to re-project. They
	// are not mismatches, and not verified inputs either.
	Unparsed int `json:"unparsed,omitempty"`
	// Unstored counts the writes of items to the provider's conversation
	// (OpenAI's Conversations API) that the record lacks, too large to
	// store: each is marked where the items went by a block of kind other
	// (calls.PlanItemsUnstored) with the SHA-256 of the request's bytes.
	// The provider's model read items the log does not hold: not a
	// mismatch (the calls' inputs are their new items only), but a gap.
	Unstored int `json:"unstored,omitempty"`
	// Mismatches lists every recorded fact the log does not prove, in log
	// order; never null.
	Mismatches []Mismatch `json:"mismatches"`
	// Writers counts the events by the role that stored their step
	// (eventlog.Record.Writer: "admin", "worker"), as the server let each
	// role's credential publish to its own subjects; never null.
	Writers map[string]int `json:"writers"`
	// Unattributed counts the events stored before roles were recorded:
	// who stored them is not proved. It is a warning, not a mismatch, so
	// that logs written before the upgrade still verify.
	Unattributed int `json:"unattributed"`
	// Provenance lists the runs of events no model call produced (an
	// import, a fork, an operator's prompt; every run when the
	// conversation holds no model call), with who stored them and when:
	// what the log proves of them. Never null.
	Provenance []Provenance `json:"provenance"`
}

// OK reports whether every recorded model input matched its re-projection.
func (v *Verification) OK() bool { return len(v.Mismatches) == 0 }

// Mismatch fields, the values of Mismatch.Field.
const (
	// FieldInputHash: the re-projected Turn's hash, in the format
	// inference.started's input_hash was recorded in (projector.HashAs),
	// differs from it: the model received something the log does not
	// reproduce. A hash in a format this build does not know cannot be
	// checked and is a mismatch too; its Message says so.
	FieldInputHash = "input_hash"
	// FieldSystemPromptHash: the active prompt's text hashes differently.
	FieldSystemPromptHash = "system_prompt_hash"
	// FieldSystemPromptID: another block (or none) was the active prompt.
	FieldSystemPromptID = "system_prompt_id"
	// FieldBlocks: the input had another number of blocks.
	FieldBlocks = "blocks"
	// FieldEvent: the event cannot be folded at all (it contradicts the
	// Turn); nothing after it can be verified.
	FieldEvent = "event"
	// FieldMessage: a stored message cannot be decoded; nothing after it
	// can be verified.
	FieldMessage = "message"
	// FieldInputBlocks: a call whose input was built from part of the
	// Turn (a compaction's summary) names blocks the log does not hold at
	// that point, or a purpose this build cannot rebuild the input of.
	FieldInputBlocks = "input_blocks"
	// FieldTemplate: a systemprompt.set or systemprompt.replaced records a
	// template text whose hash is not the template_hash it records, so the
	// log does not say which template the prompt was rendered from.
	FieldTemplate = "template"
	// FieldInferenceID: an inference.finished or inference.failed closes a
	// model call no inference.started of the conversation opened, so the
	// log proves no input for the answer or failure it records (a writer
	// that went on after its conversation was erased wrote so).
	FieldInferenceID = "inference_id"
)

// Mismatch is one recorded fact that re-projection does not reproduce.
type Mismatch struct {
	// N and Seq locate the event: its position in the conversation and
	// the stream sequence of its message. For FieldMessage, N is the
	// position the next event would have had and Seq is 0.
	N   int    `json:"n"`
	Seq uint64 `json:"seq"`
	// Inference numbers the model call from 1 (0 for FieldEvent and
	// FieldMessage); InferenceID is its recorded ID.
	Inference   int    `json:"inference,omitempty"`
	InferenceID string `json:"inference_id,omitempty"`
	// Field is what differs (the Field* constants).
	Field string `json:"field"`
	// Recorded is the value the log holds, Computed the one re-projection
	// gives.
	Recorded string `json:"recorded"`
	Computed string `json:"computed"`
	// Message says it in one line.
	Message string `json:"message"`
}

// Verify re-projects every recorded model input of a conversation and
// compares it with what inference.started recorded: the Turn's hash
// (input_hash, recomputed in the format it was recorded in, so that logs
// written before a format change still verify), the active system prompt's
// ID and text hash, and the number of blocks. It folds the log once; at
// each inference it hashes the folded Turn in the current format (which
// costs the blocks changed since the previous model call, see
// projector.Hash) and hands it, with the Turn's blocks, to a pool of
// checkers (one per CPU), copying the blocks only before events that change
// them in place (see appends). A checker recomputes the hash in the
// recorded format only when the two differ: logs recorded in an older
// format, and mismatches. A model call whose input was built from part of
// the Turn (a compaction's summary, see isAside) is checked against that
// input, rebuilt from what its inference.started records and the Turn at
// that point; a prompt event's template text against its template hash.
// An event that cannot be folded, or a
// message that cannot be decoded, is reported as a mismatch and ends the
// check; other errors (the log cannot be read) are returned. Mismatches
// come in log order.
//
// It also checks who stored each step (see verify_writers.go): an
// operator's action not stored by the admin is a FieldWriter mismatch, and
// the Verification counts the events by writer and lists what no model
// call produced. Give it a source that reads the stream, not a cache
// another role writes (eventlog.FromStreamOnly), for that to be a proof.
func Verify(ctx context.Context, src Source, conversation string, opts ...Option) (*Verification, error) {
	o := collect(opts)
	v := &Verification{Conversation: conversation, Mismatches: []Mismatch{}}
	ws := newWriters()
	jobs := make(chan checkJob, 64)
	found := make(chan []Mismatch, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out []Mismatch
			for j := range jobs {
				out = append(out, j.check()...)
			}
			found <- out
		}()
	}
	last := 0
	var stop []Mismatch
	// direct are found while folding, not by a checker.
	var direct []Mismatch
	// calls are the model calls whose closing event (which records the
	// wire request) is still to come, when wires are checked. Their input
	// Turns stay valid: the fold copies blocks before changing them.
	calls := map[string]checkJob{}
	// opened are the model calls an inference.started opened, by ID.
	opened := map[string]bool{}
	_, n, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		last = r.Pos
		if m, bad := unopened(r, opened); bad {
			direct = append(direct, m)
		}
		if o.wire != nil {
			if job, ok := wireCheck(ctx, o.wire, calls, r, v); ok {
				jobs <- job
			}
		}
		if p, ok := r.Payload.(events.InferenceStarted); ok {
			v.Inferences++
			job := checkJob{turn: &projector.Turn{Blocks: w.turn.Blocks[:len(w.turn.Blocks):len(w.turn.Blocks)], Data: w.turn.Data},
				hash: projector.Hash(w.turn), pos: r.Pos, seq: r.Seq, index: v.Inferences, p: p}
			if p.Gateway != nil {
				// A call recorded by the gateway: its input is rendered
				// again from the Turn, now, while the fold waits.
				job.hash, job.inputBlocks = p.InputHash, len(w.turn.Blocks)
				if p.Gateway["unparsed"] != "" {
					v.Unparsed++
				}
				m, n := verifyGatewayCall(w.turn, p)
				if m != "" {
					direct = append(direct, Mismatch{N: r.Pos, Seq: r.Seq, Inference: v.Inferences, InferenceID: p.InferenceID,
						Field: FieldInputHash, Recorded: p.InputHash,
						Message: fmt.Sprintf("model call #%d (event %d, seq %d, recorded by the gateway): %s", v.Inferences, r.Pos, r.Seq, m)})
				}
				if n >= 0 {
					job.inputBlocks = n
				}
				jobs <- job
			} else if isAside(p) {
				// Its input is rebuilt now, from the Turn as it stands:
				// the fold goes on meanwhile.
				in, _, err := asideInput(w.turn, p, r.Pos)
				if err != nil {
					direct = append(direct, Mismatch{N: r.Pos, Seq: r.Seq, Inference: v.Inferences, InferenceID: p.InferenceID,
						Field: FieldInputBlocks, Recorded: fmt.Sprint(p.InputBlocks),
						Message: fmt.Sprintf("model call #%d (event %d, seq %d, purpose %s): its input cannot be rebuilt: %v",
							v.Inferences, r.Pos, r.Seq, quote(p.Purpose), err)})
				} else {
					job.turn, job.hash = in, projector.Hash(in)
					jobs <- job
					if o.wire != nil {
						calls[p.InferenceID] = job
					}
				}
			} else {
				jobs <- job
				if o.wire != nil {
					calls[p.InferenceID] = job
				}
			}
		}
		if !appends(r.Type) {
			// Copy on write: the checkers may still read the blocks and
			// data the fold is about to change in place. The copy has the
			// same blocks in the same places, so the digests the Turn
			// caches stay true.
			w.turn.Blocks, w.turn.Data = slices.Clone(w.turn.Blocks), maps.Clone(w.turn.Data)
		}
		if m, bad := templateMismatch(r); bad {
			direct = append(direct, m)
		}
		if unstoredMark(r.Payload) {
			v.Unstored++
		}
		before := len(w.turn.Blocks)
		if err := w.apply(r); err != nil {
			stop = append(stop, Mismatch{N: r.Pos, Seq: r.Seq, Field: FieldEvent, Recorded: string(r.Type), Message: err.Error()})
			return errStop
		}
		ws.check(r, max(len(w.turn.Blocks)-before, 0))
		return nil
	})
	close(jobs)
	wg.Wait()
	close(found)
	for ms := range found {
		v.Mismatches = append(v.Mismatches, ms...)
	}
	v.Mismatches = append(v.Mismatches, direct...)
	v.Mismatches = append(v.Mismatches, ws.mismatches...)
	v.Writers, v.Unattributed, v.Provenance = ws.counts, ws.unattributed, ws.provenance(v.Inferences)
	// Log order; within an event, the order check lists fields in.
	slices.SortStableFunc(v.Mismatches, func(a, b Mismatch) int {
		if a.N != b.N {
			return a.N - b.N
		}
		return slices.Index(fieldOrder, a.Field) - slices.Index(fieldOrder, b.Field)
	})
	v.Mismatches = append(v.Mismatches, stop...)
	v.Events = max(n, last)
	switch {
	case errors.Is(err, errStop):
	case errors.Is(err, events.ErrInvalid) || errors.Is(err, events.ErrUnknownEvent) || errors.Is(err, events.ErrNewerVersion):
		v.Mismatches = append(v.Mismatches, Mismatch{N: last + 1, Field: FieldMessage, Message: err.Error()})
	case err != nil:
		return nil, fmt.Errorf("verify %s: %w", conversation, err)
	}
	return v, nil
}

// fieldOrder is the order check reports the fields of one inference in.
var fieldOrder = []string{FieldWriter, FieldInferenceID, FieldTemplate, FieldInputBlocks, FieldInputHash, FieldBlocks, FieldSystemPromptID, FieldSystemPromptHash, FieldWire}

// appends reports whether events of type t only add blocks after the
// existing ones (or do not touch the Turn at all). A hasher reads the
// first n blocks of the Turn's block array while the fold goes on: such
// events write past them (or into a new array), so the hashers need no
// copy. Before any other event the fold copies the blocks and the data,
// since it may change them in place; those events are few.
func appends(t events.Type) bool {
	switch t {
	case events.TypeUserAppended, events.TypeReasoningAppended, events.TypeLLMTextAppended, events.TypeToolCalled,
		events.TypeToolResult, events.TypeInferenceStarted, events.TypeInferenceFinished, events.TypeInferenceFailed,
		events.TypeRequestCompleted, events.TypeRequestFailed:
		return true
	}
	return false
}

// checkJob is one inference.started to check against the Turn it was
// recorded on (turn has the blocks and data, without the fold's caches),
// whose hash in the current format is hash.
type checkJob struct {
	turn  *projector.Turn
	hash  string
	pos   int
	seq   uint64
	index int
	p     events.InferenceStarted
	// inputBlocks, for a gateway call, is the number of blocks its input
	// had (its own, for a call continuing a stored response); -1 else.
	inputBlocks int
	// wire, when set, makes the job the check of the call's wire request
	// instead (see checkWire).
	wire *wireJob
}

// errStop ends a read early without being an error of the read.
var errStop = errors.New("stop")

// check compares the inference.started with the Turn it was recorded on.
func (j checkJob) check() []Mismatch {
	if j.wire != nil {
		return j.checkWire()
	}
	var out []Mismatch
	t, p := j.turn, j.p
	add := func(field, recorded, computed, msg string) {
		out = append(out, Mismatch{N: j.pos, Seq: j.seq, Inference: j.index, InferenceID: p.InferenceID,
			Field: field, Recorded: recorded, Computed: computed, Message: msg})
	}
	where := fmt.Sprintf("model call #%d (event %d, seq %d)", j.index, j.pos, j.seq)
	// A hash recorded in the current format that matches needs nothing
	// more; any other is recomputed in the format it names.
	if p.InputHash != j.hash {
		if h, err := projector.HashAs(t, p.InputHash); err != nil {
			add(FieldInputHash, p.InputHash, j.hash, where+": recorded input hash "+short(p.InputHash)+
				" cannot be checked: "+err.Error())
		} else if h != p.InputHash {
			add(FieldInputHash, p.InputHash, h, where+": recorded input hash "+short(p.InputHash)+
				", but the log re-projects to "+short(h)+": the model's input is not what the log says")
		}
	}
	if n := len(t.Blocks); p.Gateway != nil {
		if j.inputBlocks != p.Blocks {
			add(FieldBlocks, strconv.Itoa(p.Blocks), strconv.Itoa(j.inputBlocks),
				fmt.Sprintf("%s: recorded %s, the log re-projects to %d", where, plural.Count(p.Blocks, "input block"), j.inputBlocks))
		}
	} else if n != p.Blocks {
		add(FieldBlocks, strconv.Itoa(p.Blocks), strconv.Itoa(n),
			fmt.Sprintf("%s: recorded %s, the log re-projects to %d", where, plural.Count(p.Blocks, "input block"), n))
	}
	var id, hash string
	if sp, ok := calls.ActivePrompt(t, inputOf(t, p), p.Gateway != nil && len(p.InputBlocks) > 0); ok {
		id, hash = sp.ID, projector.HashText(sp.Text)
	}
	if id != p.SystemPromptID {
		add(FieldSystemPromptID, p.SystemPromptID, id, fmt.Sprintf("%s: recorded active system prompt %q, the log re-projects to %q",
			where, p.SystemPromptID, id))
	}
	if hash != p.SystemPromptHash {
		add(FieldSystemPromptHash, p.SystemPromptHash, hash, where+": recorded system prompt hash "+short(p.SystemPromptHash)+
			", the log re-projects to "+short(hash))
	}
	return out
}

// inputOf is the blocks of t that gateway call p names as its input (a call
// continuing a history the provider holds); nil for any other call.
func inputOf(t *projector.Turn, p events.InferenceStarted) []events.Block {
	if p.Gateway == nil || len(p.InputBlocks) == 0 {
		return nil
	}
	out := make([]events.Block, 0, len(p.InputBlocks))
	for _, id := range p.InputBlocks {
		if b, ok := t.Block(id); ok {
			out = append(out, b)
		}
	}
	return out
}
