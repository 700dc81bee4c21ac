package replay

// This file holds what --verify checks of one event on its own: a model
// call's closing event against the calls opened, a prompt's template text
// against its hash.

import (
	"fmt"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// closedCall returns the model call a closing event (inference.finished,
// inference.failed) closes and the wire request it records; ok is false
// for any other event.
func closedCall(p events.Payload) (id string, wire events.Wire, ok bool) {
	switch p := p.(type) {
	case events.InferenceFinished:
		return p.InferenceID, p.Wire, true
	case events.InferenceFailed:
		return p.InferenceID, p.Wire, true
	}
	return "", events.Wire{}, false
}

// unopened notes the model call an inference.started opens, and reports a
// closing event (inference.finished, inference.failed) of a call that
// none opened.
func unopened(r *eventlog.Record, opened map[string]bool) (Mismatch, bool) {
	if p, ok := r.Payload.(events.InferenceStarted); ok {
		opened[p.InferenceID] = true
		return Mismatch{}, false
	}
	id, _, closes := closedCall(r.Payload)
	if !closes || opened[id] {
		return Mismatch{}, false
	}
	return Mismatch{N: r.Pos, Seq: r.Seq, Field: FieldInferenceID, Recorded: id,
		Message: fmt.Sprintf("event %d, seq %d (%s) closes model call %s, which no inference.started of the conversation opened: the log proves no input for what it records",
			r.Pos, r.Seq, r.Type, quote(id))}, true
}

// templateMismatch checks the template text a prompt event recorded
// against the hash it recorded: `replay --rerun` renders that text again,
// so it must be the template the hash names.
func templateMismatch(r *eventlog.Record) (Mismatch, bool) {
	var text, hash string
	switch p := r.Payload.(type) {
	case events.SystemPromptSet:
		text, hash = p.Template, p.TemplateHash
	case events.SystemPromptReplaced:
		text, hash = p.Template, p.TemplateHash
	default:
		return Mismatch{}, false
	}
	if text == "" {
		return Mismatch{}, false
	}
	if got := projector.HashText(text); got != hash {
		return Mismatch{N: r.Pos, Seq: r.Seq, Field: FieldTemplate, Recorded: hash, Computed: got,
			Message: fmt.Sprintf("event %d (seq %d, %s): the recorded template text hashes to %s, not to the recorded template_hash %s",
				r.Pos, r.Seq, r.Type, short(got), short(hash))}, true
	}
	return Mismatch{}, false
}
