package events

import (
	"errors"
	"fmt"
	"strings"
)

// ErrInvalid is wrapped by every error that rejects a malformed envelope or
// payload, so callers can tell bad input from a failing server.
var ErrInvalid = errors.New("invalid event")

// FieldError names the field of an envelope or payload that is wrong.
type FieldError struct {
	Field string
	Msg   string

	// cause is the error of the check the field failed, when that check
	// has its own sentinel (ErrInvalidConversationID), so that callers can
	// still branch on it.
	cause error
}

func (e *FieldError) Error() string { return fmt.Sprintf("field %s %s", e.Field, e.Msg) }

// Unwrap makes every FieldError match ErrInvalid, and also the error of the
// check the field failed, such as ErrInvalidConversationID.
func (e *FieldError) Unwrap() error {
	if e.cause == nil {
		return ErrInvalid
	}
	return errors.Join(ErrInvalid, e.cause)
}

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// fieldCause is a FieldError whose message is cause's and which wraps it.
func fieldCause(field string, cause error) error {
	return &FieldError{Field: field, Msg: cause.Error(), cause: cause}
}

// prefixed puts a path in front of a nested FieldError's field name, so an
// error inside a payload reads "field payload.block_id is empty".
func prefixed(prefix string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: prefix + "." + fe.Field, Msg: fe.Msg, cause: fe.cause}
	}
	return err
}

func needID(field, id string) error {
	if id == "" {
		return fieldErr(field, "is empty")
	}
	return nil
}

func needIDs(field string, ids []string) error {
	for i, id := range ids {
		if id == "" {
			return fieldErr(fmt.Sprintf("%s[%d]", field, i), "is empty")
		}
	}
	return nil
}

// Validate implements Payload.
func (p ConversationStarted) Validate() error {
	if p.ForkedFrom != "" {
		if err := ValidateConversationID(p.ForkedFrom); err != nil {
			return fieldCause("forked_from", err)
		}
		if p.ForkedAt < 1 {
			return fieldErr("forked_at", "is %d; a fork starts after event 1 or later", p.ForkedAt)
		}
	}
	for i, b := range p.Blocks {
		if err := b.Validate(); err != nil {
			return prefixed(fmt.Sprintf("blocks[%d]", i), err)
		}
	}
	return nil
}

// Validate implements Payload.
func (p UserAppended) Validate() error {
	if !p.Trust.Valid() {
		return fieldErr("trust", "is %q", p.Trust)
	}
	return needID("block_id", p.BlockID)
}

// Validate implements Payload.
func (p SystemPromptSet) Validate() error {
	if p.Index < 0 {
		return fieldErr("index", "is %d; use 0 for the front", p.Index)
	}
	if !p.Trust.Valid() {
		return fieldErr("trust", "is %q", p.Trust)
	}
	if err := ValidateSpans("untrusted", p.Untrusted, len(p.Text)); err != nil {
		return err
	}
	return needID("block_id", p.BlockID)
}

// Validate implements Payload.
func (p SystemPromptReplaced) Validate() error {
	if err := ValidateSpans("untrusted", p.Untrusted, len(p.Text)); err != nil {
		return err
	}
	return needID("block_id", p.BlockID)
}

// Validate implements Payload.
func (p SystemPromptLocked) Validate() error { return needID("block_id", p.BlockID) }

// Validate implements Payload.
func (p SystemPromptUnlocked) Validate() error { return needID("block_id", p.BlockID) }

// Validate implements Payload.
func (p ReasoningAppended) Validate() error { return needID("block_id", p.BlockID) }

// Validate implements Payload.
func (p LLMTextAppended) Validate() error { return needID("block_id", p.BlockID) }

// Validate implements Payload.
func (p ToolCalled) Validate() error {
	if err := needID("block_id", p.BlockID); err != nil {
		return err
	}
	if err := needID("call_id", p.CallID); err != nil {
		return err
	}
	return needID("name", p.Name)
}

// Validate implements Payload.
func (p ToolResult) Validate() error {
	if err := needID("block_id", p.BlockID); err != nil {
		return err
	}
	return needID("call_id", p.CallID)
}

// Validate implements Payload.
func (p BlocksReordered) Validate() error { return needIDs("order", p.Order) }

// Validate implements Payload.
func (p BlocksRemoved) Validate() error {
	if len(p.BlockIDs) == 0 {
		return fieldErr("block_ids", "is empty")
	}
	return needIDs("block_ids", p.BlockIDs)
}

// Validate implements Payload.
func (p BlockAnnotated) Validate() error {
	if len(p.Meta) == 0 {
		return fieldErr("meta", "is empty")
	}
	return needID("block_id", p.BlockID)
}

// Validate implements Payload.
func (p BlockSplit) Validate() error {
	if err := needID("block_id", p.BlockID); err != nil {
		return err
	}
	if len(p.Into) == 0 {
		return fieldErr("into", "is empty; use blocks.removed to drop a block")
	}
	for i, b := range p.Into {
		if err := b.Validate(); err != nil {
			return prefixed(fmt.Sprintf("into[%d]", i), err)
		}
	}
	return nil
}

// Validate implements Payload.
func (p TurnCompacted) Validate() error {
	if len(p.Removed) == 0 {
		return fieldErr("removed", "is empty")
	}
	if err := needIDs("removed", p.Removed); err != nil {
		return err
	}
	if p.Summary != nil {
		if err := p.Summary.Validate(); err != nil {
			return prefixed("summary", err)
		}
	}
	return nil
}

// Validate implements Payload.
func (p DataSet) Validate() error {
	if len(p.Values) == 0 && len(p.Unset) == 0 {
		return fieldErr("values", "and unset are both empty")
	}
	for k := range p.Values {
		if k == "" {
			return fieldErr("values", "has an empty key")
		}
	}
	return needIDs("unset", p.Unset)
}

// Validate implements Payload.
func (p InferenceStarted) Validate() error {
	if err := needID("inference_id", p.InferenceID); err != nil {
		return err
	}
	if err := needIDs("input_blocks", p.InputBlocks); err != nil {
		return err
	}
	if err := ValidateSpans("untrusted", p.Untrusted, len(p.Instructions)); err != nil {
		return err
	}
	return needID("input_hash", p.InputHash)
}

// Validate implements Payload.
func (p InferenceFinished) Validate() error {
	if err := needID("inference_id", p.InferenceID); err != nil {
		return err
	}
	return p.Wire.validate()
}

// Validate implements Payload.
func (p InferenceFailed) Validate() error {
	if err := needID("inference_id", p.InferenceID); err != nil {
		return err
	}
	for i, b := range p.Partial {
		if err := b.Validate(); err != nil {
			return prefixed(fmt.Sprintf("partial[%d]", i), err)
		}
	}
	return p.Wire.validate()
}

// validate checks a recorded request: a hash is 64 lowercase hex digits
// and comes with the version of the rendering it was taken of, without
// which nobody can render the body again to check it.
func (w Wire) validate() error {
	if w.IsZero() {
		return nil
	}
	if len(w.SHA256) != 64 || strings.Trim(w.SHA256, "0123456789abcdef") != "" {
		return fieldErr("wire_sha256", "is %.80q, not a SHA-256 in 64 lowercase hex digits", w.SHA256)
	}
	if w.Version == "" {
		return fieldErr("wire_version", "is missing; a wire hash needs the version of the rendering it was taken of")
	}
	return nil
}

// Validate implements Payload.
func (p RequestCompleted) Validate() error { return nil }

// Validate implements Payload.
func (p RequestFailed) Validate() error { return needID("reason", p.Reason) }

// Validate implements Payload.
func (p FindingRecorded) Validate() error {
	if err := needID("inference_id", p.InferenceID); err != nil {
		return err
	}
	if err := needID("rule", p.Rule); err != nil {
		return err
	}
	return needIDs("blocks", p.Blocks)
}

// Validate implements Payload.
func (p MessageRemoved) Validate() error {
	switch {
	case p.Seq < 1:
		return fieldErr("seq", "is %d; stream sequences start at 1", p.Seq)
	case p.Size < 0:
		return fieldErr("size", "is %d", p.Size)
	case len(p.SHA256) != 64:
		return fieldErr("sha256", "is %d characters; a SHA-256 in hex has 64", len(p.SHA256))
	}
	return needID("reason", p.Reason)
}
