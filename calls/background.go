package calls

// This file holds background responses: a Responses API call made with
// background: true is answered "queued" with no output; the provider runs
// it later, and the app fetches the response (GET /v1/responses/{id}) or
// cancels it (POST /v1/responses/{id}/cancel). The call stays open in its
// conversation, the response it waits for noted in the Turn's data
// (BackgroundKey), until a fetch through the gateway brings its end,
// which is then recorded as the call's outcome.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// backgroundKeyPrefix begins the Turn's data keys of open background calls.
const backgroundKeyPrefix = "gateway.background."

// BackgroundKey is the Turn's data key under which call callID, a
// background response still running, notes that response's ID.
func BackgroundKey(callID string) string { return backgroundKeyPrefix + callID }

// backgroundPrefix begins the reason a background call that did not
// finish is recorded failed with, which names the response
// (BackgroundResponseID).
const backgroundPrefix = "background response "

// BackgroundResponseID returns the response a background call's failure
// reason names (inference.failed's error), "" for another reason: its ID
// is indexed for previous_response_id as a finished call's is, and erased
// with it. Reasons recorded before background calls were kept open ("...
// is queued: ...") name it alike.
func BackgroundResponseID(reason string) string {
	rest, ok := strings.CutPrefix(reason, backgroundPrefix)
	if !ok {
		return ""
	}
	id, _, ok := strings.Cut(rest, " ")
	if !ok || id == "" {
		return ""
	}
	return id
}

// BackgroundCall returns the open call of turn that waits for response
// id, "" when none does (its outcome is recorded, or no background call
// of this conversation made it).
func BackgroundCall(turn *projector.Turn, id string) string {
	for k, v := range turn.Data {
		if v == id && strings.HasPrefix(k, backgroundKeyPrefix) {
			return strings.TrimPrefix(k, backgroundKeyPrefix)
		}
	}
	return ""
}

// backgroundResponses returns the responses the open background calls of
// data wait for.
func backgroundResponses(data map[string]string) []string {
	var ids []string
	for k, v := range data {
		if strings.HasPrefix(k, backgroundKeyPrefix) {
			ids = append(ids, v)
		}
	}
	return ids
}

// PlanBackgroundOutcome returns the events that record how background
// call callID, waiting for response id, ended, as the app fetched it, and
// applies them: its note in the Turn's data unset, then the outcome as
// PlanOutcome plans one (the output's blocks and inference.finished; or
// inference.failed, whose reason names the response), all the call's step
// 2 (step 1 noted it queued).
func PlanBackgroundOutcome(turn *projector.Turn, callID, id string, o Outcome) ([]events.Event, error) {
	c := &Call{ID: callID, Request: &Request{API: Responses}, outcomeStep: 2}
	if o.Output != nil && o.Output.Error != "" && o.Failure == "" {
		o.Failure, o.Transient = o.Output.Error, o.Output.ErrorTransient
	}
	if o.Failure != "" {
		o.Failure = fmt.Sprintf("%s%s ended without an answer: %s", backgroundPrefix, id, o.Failure)
	}
	unset := c.event(turn.Conversation, c.outcomeStep, events.DataSet{Unset: []string{BackgroundKey(callID)}})
	if err := projector.Apply(turn, unset); err != nil {
		return nil, fmt.Errorf("record call %s: %w", callID, err)
	}
	evs, err := PlanOutcome(turn, c, o)
	if err != nil {
		return nil, err
	}
	return append([]events.Event{unset}, evs...), nil
}

// Include is a Responses API request's include list (what the provider
// adds to its response, such as reasoning.encrypted_content), nil when it
// has none or it is not a list of strings: a background response fetched
// on the app's behalf is asked for what the app asked for.
func (r *Request) Include() []string {
	raw, ok := r.canon["include"]
	if !ok {
		return nil
	}
	var include []string
	if json.Unmarshal(raw, &include) != nil {
		return nil
	}
	return include
}
