package check

// This file holds the allowed move "another choice taken": a Chat
// Completions call that asked for several answers ("n" above 1) has its
// first choice as its output and keeps the others in inference.finished
// (other_choices); an app that goes on with one of the others sends that
// one back instead of the first.

import (
	"slices"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// noteChoices keeps, at a call's inference.finished, its other choices as
// the keys of the blocks the app would send back of them (a choice left
// out of the record for its size by those it kept), and its output (the
// first choice).
func (iv *interval) noteChoices(p events.InferenceFinished) {
	iv.choices, iv.firstChoice = nil, nil
	if p.OtherChoices == "" {
		return
	}
	others, err := calls.OtherChoiceKeys(p.OtherChoices)
	if err != nil {
		return
	}
	for _, ks := range others {
		if len(ks) > 0 {
			iv.choices = append(iv.choices, ks)
		}
	}
	if len(iv.choices) > 0 {
		iv.firstChoice = append([]string(nil), iv.outputs...)
	}
}

// choiceTaken returns the blocks of the previous call's first choice when
// the input goes on with another of its choices instead: every block of
// that choice (its text, each tool call by its ID, tool and arguments, as
// the model wrote them, compared as JSON: one sent back edited is a
// rewrite) is among the blocks the request of call, whose
// inference.started it is, added, or is a block of the first choice of
// the same content (threading keeps the first's block for a text both
// choices begin with), and no other block of the first choice is left in
// the input (another choice stands in for the first only whole). nil
// otherwise.
func (c *Checker) choiceTaken(in []events.Block, call events.Event) map[string]bool {
	for _, ch := range c.since.choices {
		shared, ok := c.since.sentChoice(in, ch, call)
		if !ok || c.firstChoiceKept(in, shared) {
			continue
		}
		taken := make(map[string]bool, len(c.since.firstChoice))
		for _, id := range c.since.firstChoice {
			taken[id] = true
		}
		return taken
	}
	return nil
}

// firstChoiceKept reports whether a block of the first choice is in in
// other than those shared, which stand for blocks of the choice taken.
// Another choice stands in for the first only in its place, whole: its
// text sent with the first's tool call (or the other way round) is a
// turn the model never wrote, and the first's blocks left out of it are
// history rewritten.
func (c *Checker) firstChoiceKept(in []events.Block, shared map[string]bool) bool {
	for i := range in {
		if !shared[in[i].ID] && slices.Contains(c.since.firstChoice, in[i].ID) {
			return true
		}
	}
	return false
}

// sentChoice reports whether every block of choice ch is in in, added by
// the request of call or a block of the first choice (each once), with
// the same content as threading compares it (calls.ChoiceKey.Matches,
// for a choice kept whole or left out by its keys; calls.Key: a tool call's
// arguments as JSON, a refusal or other part by its digest; a tool call
// read as doubles, calls.DoublesKey, as sent back by an app that parses
// it with JSON.parse; a text sent back with other thinking than the
// choice's is none of it, calls.SameThought); shared holds the first
// choice's blocks it took.
func (iv *interval) sentChoice(in []events.Block, ch []calls.ChoiceKey, call events.Event) (shared map[string]bool, ok bool) {
	shared = map[string]bool{}
	for j := range ch {
		found := false
		for i := range in {
			b := &in[i]
			if !ch[j].Matches(b) {
				continue
			}
			if iv.callInput(b.ID, call) {
				found = true
				break
			}
			if !shared[b.ID] && slices.Contains(iv.firstChoice, b.ID) {
				shared[b.ID], found = true, true
				break
			}
		}
		if !found {
			return nil, false
		}
	}
	return shared, true
}
