package check

import (
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// AsideInput rebuilds the input of a model call whose input was not the
// conversation's Turn but built from part of it (inference.started with
// Instructions or InputBlocks: a compaction's summary), from the Turn as it
// stood at that call. How such an input is built belongs to the middleware
// that made the call, which this package does not import: replay passes
// one that knows the built-in purposes. An error leaves the call
// unchecked (`replay --verify` reports an input it cannot rebuild).
type AsideInput func(turn *projector.Turn, p events.InferenceStarted) (*projector.Turn, error)

// Option configures a Checker.
type Option func(*Checker)

// WithAsideInput checks the calls whose input was built from part of the
// Turn against the input fn rebuilds. Without it such calls are counted
// (call numbers stay those of `replay --inference`) but not checked.
func WithAsideInput(fn AsideInput) Option { return func(c *Checker) { c.aside = fn } }

// Checker checks the model calls of one conversation as its events go by,
// in log order from the first. It keeps its own projection of the Turn and
// what the rules across calls need: the previous call's input, what
// happened since (compactions, operator prompt changes, the documented
// middlewares' moves) and each reasoning block as the model produced it.
// It belongs to one goroutine at a time.
type Checker struct {
	// turn is Feed's projection (nil when fed through Observe).
	turn  *projector.Turn
	aside AsideInput
	calls int

	// prev is the input of the previous call that received the Turn (nil
	// before the first); since is what happened after it.
	prev  *sent
	since interval
	// produced holds each reasoning block as it was first appended (the
	// model's own), by ID, for reasoning_altered; follower the ID of the
	// model text, tool call or reasoning the model produced right after it.
	produced map[string]content
	follower map[string]string
	// producedBy numbers, by reasoning block, the call whose output it was.
	producedBy map[string]int
	// signed and thought name, by encrypted content and by text, the
	// first reasoning block that carried it (signedCopy); current is the
	// inference.started being checked.
	signed, thought map[string]string
	current         events.Event
	// documents is what roleMarkers found in each block's text files
	// (documentMarker), by block.
	documents map[string]string
	// lastOutput is the block the engine appended last in this interval,
	// so the next one is known as its follower.
	lastOutput string
	// origin is the actor of the systemprompt.set that created a system
	// block ("" for blocks that came otherwise: a fork, a split).
	origin map[string]string
	// inserted holds the blocks a block.inserted put in: a model text
	// the model did not produce, a user-kind text the user did not write,
	// so that a repeated run is told from history copied (Runs).
	inserted map[string]bool
	// copied holds the inserted model texts that copy one the Turn
	// already held when they were put in (history copied before itself,
	// Runs), not a text the model may say later (a few-shot example).
	copied map[string]bool
	// runs scans each input for repeated runs, resuming where it differs
	// from the previous one; carried holds the previous call's findings
	// on reasoning blocks, by block, which hold again for a reasoning
	// block and its follower that did not change. With them a call costs
	// a comparison of its input with the previous one, and map work for
	// what is new only.
	state   inputState
	carried map[string][]Finding
	// parts holds, by system block, whether the parts its client wrote
	// repeat a text (repeatedParts), read once while the block stays.
	parts map[string]partsSeen
	// verify, set by tests only, gets each call's findings of the rules
	// that keep state from call to call, computed incrementally and from
	// scratch.
	verify func(incremental, fresh []Finding)
	// reported holds the keys of the findings of the previous call (of
	// each kind), so a fault an input still carries is reported once, at
	// the call that first received it.
	reported, reportedAside map[string]bool
	// reportedChained is reported for the chained calls (see chained.go),
	// chainedCalls counts them.
	reportedChained map[string]bool
	chainedCalls    int
	// prompt is the active system prompt of the latest call that received
	// the Turn or was chained, for system_prompt_changed; promptFree says a
	// compaction or an operator may have changed it since.
	prompt     promptSeen
	promptFree bool
	// continued is how many blocks the Turn had at the latest call when
	// that call continued a history held on the provider's side (the
	// Responses API's previous_response_id or conversation: its input is
	// the new items, the rest is the provider's); -1 when the latest call received the
	// Turn itself. Pending then judges only what came after it.
	continued int
}

// sent is what one call received, block by block.
type sent struct {
	call     int
	ids      []string
	contents []content
	// prompt is the active system prompt (first system block); "" none.
	prompt     string
	promptText string
}

// interval is what happened between two calls that received the Turn.
type interval struct {
	compacted bool
	// operator: an operator changed a system prompt (its own `turnlog
	// prompt`, or the global prompt, which only the operator's profile
	// writes).
	operator bool
	// ordered: the ordering middleware moved blocks.
	ordered bool
	// removed names the blocks removed by an allowed event, and by whom.
	removed map[string]string
	// leftOut are the reasoning blocks the model produced that the
	// gateway removed because a chained call sent the items after the
	// response it continues again without them (chainedLeftOut).
	leftOut []leftOut
	// movedBy and removedBy name the events that moved history, or
	// removed a block of it, and are allowed none of it (a middleware of
	// one's own, say): what a history_rewritten finding then blames.
	movedBy   []string
	removedBy map[string]string
	// changed: an event may have changed, moved or removed a block the
	// previous call sent (anything but appending blocks at the end).
	changed bool
	// outputs are the blocks the model and the tools appended, in order,
	// with their content then: history from the next call on.
	outputs []string
	content map[string]content
	// step holds the step of each output the gateway appended
	// (markCallInput).
	step map[string]string
	// choices are the other choices of the previous call, when it asked
	// for several, and firstChoice its output, which another of them may
	// stand in for (choiceTaken).
	choices     [][]calls.ChoiceKey
	firstChoice []string
}

// content is what a model reads of a block.
type content struct {
	kind                                       events.Kind
	text, tool, args, callID, encrypted, parts string
	isError                                    bool
}

func contentOf(b *events.Block) content {
	return content{b.Kind, b.Text, b.ToolName, b.Arguments, b.CallID, b.Encrypted, b.Meta[events.MetaParts], b.IsError}
}

// Actors whose moves of history are allowed (see docs/auditing-check.md).
// They are the built-in middlewares' actor names, spelt out here because
// this package imports none of them.
const (
	actorOrdering       = "ordering"
	actorReasoningGuard = "reasoningguard"
	actorGlobalPrompt   = "globalprompt"
	actorImport         = "import"
	operatorPrefix      = "operator:"
	metaGlobalPromptID  = "globalprompt.id"
	metaRolesSplitFrom  = "roles.split_from"
)

// New returns a Checker for a conversation's events from its first.
func New(opts ...Option) *Checker {
	c := &Checker{produced: map[string]content{}, follower: map[string]string{}, producedBy: map[string]int{}, origin: map[string]string{}, inserted: map[string]bool{}, copied: map[string]bool{},
		reported: map[string]bool{}, reportedAside: map[string]bool{}, reportedChained: map[string]bool{}, continued: -1}
	c.since.reset()
	for _, o := range opts {
		o(c)
	}
	return c
}

func (iv *interval) reset() {
	*iv = interval{removed: map[string]string{}, removedBy: map[string]string{}, content: map[string]content{}}
}

// Calls counts the model calls (inference.started events) fed so far.
func (c *Checker) Calls() int { return c.calls }

// Feed folds the conversation's next event. At an inference.started it
// checks the call's input and returns its findings (none otherwise, and
// none for a fault the previous call's input already had). An event the
// projector rejects is returned as its error and changes nothing; the
// conversation cannot be checked past it.
func (c *Checker) Feed(e events.Event) ([]Finding, error) {
	if c.turn == nil {
		c.turn = projector.New(e.Conversation)
	}
	if err := projector.Apply(c.turn, e); err != nil {
		return nil, err
	}
	return c.Observe(e, c.turn.Events, c.turn), nil
}

// Observe is Feed for a caller that folds the events itself (replay's
// timeline does, and a gateway holds the Turn anyway), so the Turn is not
// folded twice: turn is the conversation with e applied (for an
// inference.started, the Turn before it is the same), n is e's position.
// A Checker is fed either way, never both.
func (c *Checker) Observe(e events.Event, n int, turn *projector.Turn) []Finding {
	c.note(e, n, turn)
	p, ok := e.Payload.(events.InferenceStarted)
	if !ok {
		return nil
	}
	c.calls++
	c.current = e
	c.continued = -1
	if (p.Gateway["previous_response_id"] != "" || p.Gateway["provider_conversation"] != "") && p.Instructions == "" {
		c.continued = len(turn.Blocks)
	}
	if in, ok := chainedInput(turn, p); ok {
		return c.chained(in, turn, n)
	}
	if p.Instructions != "" || len(p.InputBlocks) > 0 {
		if c.aside == nil {
			return nil
		}
		in, err := c.aside(turn, p)
		if err != nil || in == nil {
			return nil
		}
		var fresh inputState
		return c.stamp(c.inputRules(in.Blocks, &fresh, 0, nil), n, c.reportedAside)
	}
	in := turn.Blocks
	same := c.samePrefix(in)
	carried := map[string][]Finding{}
	fs := c.inputRules(in, &c.state, same, carried)
	fs = append(fs, c.history(in, same, e)...)
	if c.verify != nil {
		var fresh inputState
		c.verify(fs, append(c.inputRules(in, &fresh, 0, nil), c.history(in, 0, e)...))
	}
	c.carried = carried
	fs = append(fs, c.promptChanged(promptOf(c.calls, in))...)
	sortFindings(fs)
	fs = c.stamp(fs, n, c.reported)
	c.prev = c.prev.next(c.calls, in, same)
	c.since.reset()
	c.lastOutput = ""
	return fs
}

// Conversation checks a whole conversation, its events in log order from
// the first, and returns the findings in call order and how many model
// calls it has. It stops at an event the projector rejects, returning the
// findings so far with the error.
func Conversation(evs []events.Event, opts ...Option) (findings []Finding, calls int, err error) {
	c := New(opts...)
	findings = []Finding{}
	for _, e := range evs {
		fs, err := c.Feed(e)
		if err != nil {
			return findings, c.calls, err
		}
		findings = append(findings, fs...)
	}
	return findings, c.calls, nil
}

// stamp numbers the findings with the current call, drops those the
// previous call of the same kind already had and remembers the rest.
func (c *Checker) stamp(fs []Finding, n int, reported map[string]bool) []Finding {
	now := make(map[string]bool, len(fs))
	out := fs[:0]
	for _, f := range fs {
		f.Call, f.N = c.calls, n
		if f.Blocks == nil {
			f.Blocks = []string{}
		}
		if f.Rule.change() {
			// A change since the previous call, not a fault the input
			// carries: each is new, on the same block too.
			out = append(out, f)
			continue
		}
		k := f.key()
		if f.Rule == RuleReasoningWithoutFollower {
			// One reasoning block out of place is one fault, whatever
			// now follows it.
			k = string(f.Rule) + "\x00" + f.Blocks[0]
		}
		now[k] = true
		if reported[k] {
			continue
		}
		out = append(out, f)
	}
	clear(reported)
	for k := range now {
		reported[k] = true
	}
	return out
}

// next is what call sent, in, whose first same blocks are those of s
// (nil before the first call): s's slices are reused for them.
func (s *sent) next(call int, in []events.Block, same int) *sent {
	if s == nil {
		s, same = &sent{}, 0
	}
	s.call = call
	s.ids, s.contents = s.ids[:same], s.contents[:same]
	for i := same; i < len(in); i++ {
		s.ids = append(s.ids, in[i].ID)
		s.contents = append(s.contents, contentOf(&in[i]))
	}
	s.prompt, s.promptText = "", ""
	for i := range in {
		if in[i].Kind == events.KindSystem {
			s.prompt, s.promptText = in[i].ID, in[i].Text
			break
		}
	}
	return s
}

// samePrefix counts the first blocks of in that are the previous call's,
// in the same places with the same content: usually all it sent.
func (c *Checker) samePrefix(in []events.Block) int {
	if c.prev == nil {
		return 0
	}
	if !c.since.changed && len(in) >= len(c.prev.ids) {
		// Only appended to: the previous input is all there.
		return len(c.prev.ids)
	}
	n := min(len(in), len(c.prev.ids))
	for i := range n {
		if in[i].ID != c.prev.ids[i] || contentOf(&in[i]) != c.prev.contents[i] {
			return i
		}
	}
	return n
}
