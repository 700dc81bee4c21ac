package calls

import "github.com/turnlog/turnlog/events"

// FieldInstructions is the Responses API's instructions field, a block's
// MetaField: instructions that apply to their call alone, not items of
// the history (see ContinuesBesideInstructions).
const FieldInstructions = "instructions"

// LastOutputItemID returns the ID of the item of the last block of blocks
// a model writes (ModelOutput), "" when that item carries none: the item a
// Responses client sends back with the ID its response gave it, by which
// Threads.Items finds the state the call that produced it left.
func LastOutputItemID(blocks []events.Block) string {
	for i := len(blocks) - 1; i >= 0; i-- {
		if !ModelOutput(blocks[i].Kind) {
			continue
		}
		for i > 0 && blocks[i].Meta[MetaPart] != "" {
			i-- // the item's first block names it
		}
		return itemID(blocks[i].Meta[MetaItem])
	}
	return ""
}

// ContinuesBesideInstructions reports whether blocks, a call's whole
// input, begin with state, a recorded call's input and output, and go on
// after it, each compared without the Responses API's instructions it
// begins with: a call that continues the items of a recorded call with
// instructions of its own (an agent SDK hands the chat to another agent,
// whose instructions each of its calls sends).
func ContinuesBesideInstructions(state, blocks []events.Block) bool {
	state, blocks = withoutInstructions(state), withoutInstructions(blocks)
	if len(state) == 0 || len(blocks) <= len(state) || !ModelOutput(state[len(state)-1].Kind) {
		return false
	}
	for i := range state {
		if Key(&state[i]) != Key(&blocks[i]) {
			return false
		}
	}
	return true
}

// withoutInstructions is blocks without the Responses API's instructions
// they begin with.
func withoutInstructions(blocks []events.Block) []events.Block {
	if len(blocks) > 0 && blocks[0].Kind == events.KindSystem && blocks[0].Meta[MetaField] == FieldInstructions {
		return blocks[1:]
	}
	return blocks
}
