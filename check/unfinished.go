package check

// This file holds the allowed move "an unfinished tool call parsed": a
// model that reached its output limit while it wrote a tool call's
// arguments left them cut short, not JSON, and an SDK sends the call back
// with the arguments it made of them (the JSON completed as far as it can
// be), which are no longer the model's text.

import (
	"encoding/json"

	"github.com/turnlog/turnlog/events"
)

// unfinishedCallSent reports whether want, a tool call whose arguments are
// not JSON, is in in as a tool call with the same call ID and tool, and
// arguments an SDK may have made of want's (parsedFrom), that the request
// of call, whose inference.started it is, added.
func (c *Checker) unfinishedCallSent(in []events.Block, want content, call events.Event) bool {
	if want.kind != events.KindToolCall || want.callID == "" || json.Valid([]byte(want.args)) {
		return false
	}
	for i := range in {
		b := &in[i]
		if b.Kind == events.KindToolCall && b.CallID == want.callID && b.ToolName == want.tool && c.since.callInput(b.ID, call) && parsedFrom(b.Arguments, want.args) {
			return true
		}
	}
	return false
}
