package check

// This file holds how a reasoning block an app edited is recognised when
// the record holds it as a block of its own, and which blocks a recorded
// call's own input added.

import (
	"strconv"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// noteSigned remembers the first reasoning block that carried enc (its
// encrypted content, which holds the provider's signature), and the
// first that carried text.
func (c *Checker) noteSigned(id, text, enc string) {
	if c.signed == nil {
		c.signed, c.thought = map[string]string{}, map[string]string{}
	}
	if _, ok := c.signed[enc]; !ok && enc != "" {
		c.signed[enc] = id
	}
	if _, ok := c.thought[text]; !ok && text != "" {
		c.thought[text] = id
	}
}

// signedCopy: reasoning block i of in carries the encrypted content of an
// earlier reasoning block the model produced, with another text, or (a
// block the call's own request added) its text with another encrypted
// content. An app that edits a thinking block keeps its signature
// (Anthropic checks the text against it), one that mangles or forges the
// signature keeps the text; a record that compares blocks by content, as
// the gateway's does, holds either as a new block, whose first
// reasoning.appended is the altered block itself. The text is compared
// only for what the request added: a model may think the same words
// twice, each time with a signature of its own.
func (c *Checker) signedCopy(in []events.Block, i int) []Finding {
	b := &in[i]
	if first, ok := c.signed[b.Encrypted]; ok && b.Encrypted != "" && first != b.ID && c.produced[first].text != b.Text && c.textSigned() {
		p := c.produced[first]
		return []Finding{{Rule: RuleReasoningAltered, Blocks: []string{b.ID, first},
			Detail: blockAt(in, i) + " is not what the model produced: it carries the signature (encrypted content) of reasoning " + first +
				", whose text differs (" + strconv.Itoa(len(p.text)) + " bytes produced, " + strconv.Itoa(len(b.Text)) + " sent)"}}
	}
	if first, ok := c.thought[b.Text]; ok && b.Text != "" && first != b.ID && c.produced[first].encrypted != b.Encrypted &&
		c.since.callInput(b.ID, c.current) {
		return []Finding{{Rule: RuleReasoningAltered, Blocks: []string{b.ID, first},
			Detail: blockAt(in, i) + " is not what the model produced: it carries the text of reasoning " + first +
				" with another signature (encrypted content)"}}
	}
	return nil
}

// markCallInput notes that the gateway (calls.Actor) appended block id in
// e's step: if that step's inference.started follows, the block is what
// the call's request added, not history the model or a tool appended
// since the previous call.
func (iv *interval) markCallInput(id string, e events.Event) {
	if e.Actor != calls.Actor {
		return
	}
	if iv.step == nil {
		iv.step = map[string]string{}
	}
	iv.step[id] = callStep(e)
}

// callStep names the request step an event belongs to: the gateway writes
// a call's input events and its inference.started in one step.
func callStep(e events.Event) string { return e.Cause + ":" + strconv.Itoa(e.Step) }

// callInput reports whether block id was added by the request of the call
// whose inference.started is e.
func (iv *interval) callInput(id string, e events.Event) bool {
	s, ok := iv.step[id]
	return ok && e.Actor == calls.Actor && s == callStep(e)
}

// textSigned reports whether a reasoning block's text is what its
// encrypted content signs in the call being checked: Anthropic's thinking
// (the signature covers the thinking), not a Responses reasoning item,
// whose text is its summary, display text that an app may leave out
// ("summary": []) while the encrypted content it sends back is the
// model's own.
func (c *Checker) textSigned() bool {
	p, ok := c.current.Payload.(events.InferenceStarted)
	return !ok || p.Gateway["api"] != string(calls.Responses)
}
