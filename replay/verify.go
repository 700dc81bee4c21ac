package replay

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Verification is the result of Verify. Its JSON form is the stable output
// of `turnlog replay --verify -o json`.
type Verification struct {
	Conversation string `json:"conversation"`
	// Events and Inferences count what was checked.
	Events     int `json:"events"`
	Inferences int `json:"inferences"`
	// Mismatches lists every recorded fact the log does not prove, in log
	// order; never null.
	Mismatches []Mismatch `json:"mismatches"`
}

// OK reports whether every recorded model input matched its re-projection.
func (v *Verification) OK() bool { return len(v.Mismatches) == 0 }

// Mismatch fields, the values of Mismatch.Field.
const (
	// FieldInputHash: projector.Hash of the re-projected Turn differs from
	// inference.started's input_hash: the model received something the
	// log does not reproduce.
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
// compares it with what inference.started recorded: projector.Hash of the
// Turn (input_hash), the active system prompt's ID and text hash, and the
// number of blocks. It folds the log once, hashing at each inference, so
// its cost is one fold plus one hash per model call. An event that cannot
// be folded, or a message that cannot be decoded, is reported as a
// mismatch and ends the check; other errors (the log cannot be read) are
// returned.
func Verify(ctx context.Context, src Source, conversation string, opts ...Option) (*Verification, error) {
	o := collect(opts)
	v := &Verification{Conversation: conversation, Mismatches: []Mismatch{}}
	last := 0
	_, n, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		last = r.Pos
		if p, ok := r.Payload.(events.InferenceStarted); ok {
			v.Inferences++
			v.check(w.turn, r, p)
		}
		if err := w.apply(r); err != nil {
			v.Mismatches = append(v.Mismatches, Mismatch{N: r.Pos, Seq: r.Seq, Field: FieldEvent,
				Recorded: string(r.Type), Message: err.Error()})
			return errStop
		}
		return nil
	})
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

// errStop ends a read early without being an error of the read.
var errStop = errors.New("stop")

// check compares one inference.started with the Turn it was recorded on.
func (v *Verification) check(t *projector.Turn, r *eventlog.Record, p events.InferenceStarted) {
	add := func(field, recorded, computed, msg string) {
		v.Mismatches = append(v.Mismatches, Mismatch{N: r.Pos, Seq: r.Seq, Inference: v.Inferences, InferenceID: p.InferenceID,
			Field: field, Recorded: recorded, Computed: computed, Message: msg})
	}
	where := fmt.Sprintf("model call #%d (event %d, seq %d)", v.Inferences, r.Pos, r.Seq)
	if h := projector.Hash(t); h != p.InputHash {
		add(FieldInputHash, p.InputHash, h, where+": recorded input hash "+short(p.InputHash)+
			", but the log re-projects to "+short(h)+": the model's input is not what the log says")
	}
	if len(t.Blocks) != p.Blocks {
		add(FieldBlocks, strconv.Itoa(p.Blocks), strconv.Itoa(len(t.Blocks)),
			fmt.Sprintf("%s: recorded %d input blocks, the log re-projects to %d", where, p.Blocks, len(t.Blocks)))
	}
	var id, hash string
	if sp, _, ok := t.SystemPrompt(); ok {
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
}
