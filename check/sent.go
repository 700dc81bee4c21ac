package check

import "github.com/turnlog/turnlog/events"

// Sent checks a model call's input as its wire request carried it: in
// without the blocks carried says the request left out (an engine's
// renderer reports them, engine.BlockNote with Sent false: reasoning that
// Chat Completions has no input for, say). It applies the rules of one
// input on its own (those Pending applies) and returns only what dropping
// those blocks broke, which the check of the Turn (Observe) cannot see: a
// tool result sent without its call, a reasoning block whose follower was
// not sent. Each is stamped with call and n (the call's number and the
// position of its inference.started) and says "in the request as sent".
// The renderer is the caller's (package check imports no engine): this
// keeps the package free of provider SDKs.
func (c *Checker) Sent(call, n int, in []events.Block, carried func(i int) bool) []Finding {
	var wire []events.Block
	for i := range in {
		if carried(i) {
			wire = append(wire, in[i])
		}
	}
	if len(wire) == len(in) {
		return nil
	}
	turn := map[string]bool{}
	var whole inputState
	for _, f := range c.inputRules(in, &whole, 0, nil) {
		turn[f.key()] = true
	}
	var sent inputState
	var out []Finding
	for _, f := range c.inputRules(wire, &sent, 0, nil) {
		if !isPendingRule(f.Rule) || turn[f.key()] {
			continue
		}
		f.Call, f.N = call, n
		f.Detail = "in the request as sent (" + itoa(len(in)-len(wire)) + " of the input's " + itoa(len(in)) +
			" blocks not sent; indexes count the blocks sent): " + f.Detail
		if f.Blocks == nil {
			f.Blocks = []string{}
		}
		out = append(out, f)
	}
	sortFindings(out)
	return out
}

func isPendingRule(r Rule) bool {
	for _, p := range pendingRules {
		if p == r {
			return true
		}
	}
	return false
}
