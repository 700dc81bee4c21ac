package calls

// A model call as the recorder plans it: what it is, where it was forked
// from, and the events it is recorded as.

import (
	"time"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Actor is the actor of every event the gateway records.
const Actor = "gateway"

// SourceImport is the "source" of an imported call's inference.started
// (its gateway map): read from a log of calls, not seen by a gateway.
const SourceImport = "import"

// Threading says how a call's conversation was found, recorded in
// inference.started's gateway "threading" key.
const (
	// ThreadExplicit: the client named it (Turnlog-Conversation, a
	// previous_response_id of a recorded call, or a provider's
	// conversation: ProviderConversationID).
	ThreadExplicit = "explicit"
	// ThreadInferred: the call's input begins with a recorded call's input
	// and output (see Index).
	ThreadInferred = "inferred"
	// ThreadNew: nothing matched; the call starts a conversation.
	ThreadNew = "new"
)

// Call is a model call to record.
type Call struct {
	// ID identifies the call: the cause of its events and its inference
	// ID. Empty: a ULID is made.
	ID string
	// API is the API the call was made to (its route). A parsed call's
	// Request says it too; for an unparsed call it is all that is known of
	// its shape, and inference.started names it ("api") all the same.
	API API
	// Request is the parsed request; nil for an unparsed call, whose
	// Unparsed says why.
	Request  *Request
	Unparsed string
	// Wire is WireSHA256 of the body as the client sent it.
	Wire string
	// Threading is one of the Thread* values.
	Threading string
	// Fork, when set on a call to a conversation without events, starts it
	// as a fork of another conversation's Turn (inferred threading that
	// matched an earlier state).
	Fork *Fork
	// Time stamps the events (import --calls: the logged time); zero is
	// now.
	Time time.Time
	// Instance names the gateway process recording the call (its
	// inference.started's gateway "instance"): a call left open when that
	// process stopped is closed as abandoned by another that knows it is
	// gone. Empty for a call recorded after the fact (import, the spool).
	Instance string
	// Import, for a call read from a log of calls (import --calls), which
	// no gateway saw, is the hash that names it in that log: its
	// inference.started says so (gateway "source": "import", "import":
	// the hash), and the threading index notes it (Threads.Imported).
	Import string
	// Observe, when set, is called with each event the plans (PlanInput,
	// PlanOutcome) apply to the Turn, right after it is applied: a checker
	// that reads the Turn as it stands at each event (check's Observe)
	// follows the plan without folding the events into a Turn of its own.
	Observe func(e events.Event, turn *projector.Turn)
	// Compact marks a call to the Responses API's compaction
	// (CompactPath): its output is the history the conversation goes on
	// from, so PlanOutcome compacts away the blocks before it
	// (turn.compacted), keeping the system prompt.
	Compact bool
	// Headers are the call's recorded headers (HeadersOf), written into
	// its inference.started's gateway map under MetaHeaderPrefix.
	Headers map[string]string
	// ResentFrom, for a call continuing a stored response (Request
	// Continues) whose conversation went on after that response, is how
	// many blocks the Turn held at the response, when the call's input
	// begins with the blocks the Turn holds after them, sent again: a
	// tool loop chained by previous_response_id (the Vercel AI SDK's)
	// names one response in each of its steps, and sends the earlier
	// steps' input and output again before the tool's result. PlanInput
	// takes those items as the blocks they are, not as new ones. Zero: the
	// call's items are all new.
	ResentFrom int
	// appended are the blocks PlanInput added for a call continuing a
	// history the provider holds (Request.Continues): what PlanOutcome
	// removes again when the provider refused the call.
	appended []string
	// outcomeStep is the step PlanOutcome's events are (0: 1, the step
	// after the input's); a background call's end, recorded after the
	// step that noted it queued, is step 2.
	outcomeStep int
}

// Scope is the call's scope (Request.Scope; "" for a call not read).
func (c *Call) Scope() string {
	if c.Request == nil {
		return ""
	}
	return c.Request.Scope
}

// Fork is where a conversation branched off: From at position At, whose
// Turn was Blocks and Data.
type Fork struct {
	From   string
	At     int
	Blocks []events.Block
	Data   map[string]string
}

func (c *Call) event(conv string, step int, p events.Payload) events.Event {
	e := events.New(conv, c.ID, step, Actor, p)
	if !c.Time.IsZero() {
		e.Time = c.Time.UTC()
	}
	return e
}
