package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/check"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// CallStatus says how a model call ended, as its closing event recorded.
type CallStatus string

// Statuses of a model call.
const (
	// CallFinished: inference.finished closed the call.
	CallFinished CallStatus = "finished"
	// CallFailed: inference.failed closed it (Error says why).
	CallFailed CallStatus = "failed"
	// CallOpen: no event closed it yet: it is running, or the process
	// making it died (its request is then taken over, and the call stays
	// open in the log).
	CallOpen CallStatus = "open"
)

// Usage is the tokens a call's closing event recorded.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Call is one model call of a conversation, the unit a person asks about
// ("what did the model get on its third call, and what changed since the
// second?"). Its JSON form is the stable answer of GET
// /conversations/{id}/calls.
type Call struct {
	// Call numbers the conversation's model calls from 1, as `replay
	// --inference N` does; N is the position of its inference.started.
	Call        int       `json:"call"`
	N           int       `json:"n"`
	Time        time.Time `json:"time"`
	InferenceID string    `json:"inference_id"`
	Model       string    `json:"model"`
	// Provider is whom the call went to, as the log tells it: "openai" or
	// "anthropic" for a call the gateway recorded (its API) or an engine
	// that recorded its wire rendering, the engine's name otherwise; ""
	// when the log does not say.
	Provider string `json:"provider"`
	// Purpose is set for a call made aside from the answer ("compaction").
	Purpose string `json:"purpose,omitempty"`
	// Threading is how the recording gateway found the call's
	// conversation (explicit, inferred, new); "" for a worker's call.
	Threading string `json:"threading,omitempty"`
	// Headers are the request headers the gateway recorded for the call,
	// those that change what the provider does (calls.RecordedHeaders:
	// anthropic-version, anthropic-beta, openai-beta), and the SDK's
	// retry count when the call was a retry.
	Headers map[string]string `json:"headers,omitempty"`
	// InputHash is the hash inference.started recorded and Verified
	// whether the input re-projected from the log hashes to it.
	InputHash string `json:"input_hash"`
	Verified  bool   `json:"verified"`
	// Unparsed, for a gateway call whose request the gateway could not
	// read (not JSON, or not its API's shape), says why: the call is
	// recorded by WireSHA256 alone, there is no input to verify, and
	// Verified is false.
	Unparsed string `json:"unparsed,omitempty"`
	// InputBlocks counts the blocks of the call's input; -1 when the log
	// cannot rebuild it.
	InputBlocks int `json:"input_blocks"`
	// WireSHA256 is the SHA-256 of the request body as it was sent: for a
	// gateway call, of the bytes the client sent; "" when none was
	// recorded.
	WireSHA256 string `json:"wire_sha256"`
	// LatencyMS is the call's duration in milliseconds as its closing
	// event recorded it; null while it is open, or when it is unknown (a
	// logged call imported without its duration).
	LatencyMS *float64 `json:"latency_ms"`
	// Usage is null when the call is open, failed, or its provider
	// reported no tokens.
	Usage  *Usage     `json:"usage"`
	Status CallStatus `json:"status"`
	// Error is why a failed call failed.
	Error string `json:"error,omitempty"`
	// Output is what the model produced (reasoning, text, tool calls), in
	// order, as it was appended; empty for a failed or open call.
	Output []events.Block `json:"output"`
	// Partial, for a failed call, is what the model had produced and the
	// client received before the call failed (a stream's deltas before
	// its error event or its cut), as inference.failed keeps it: not
	// added to the conversation, which did not go on from it. Absent
	// when there was none (and for calls recorded before it was kept).
	Partial []events.Block `json:"partial,omitempty"`
	// OtherChoices, for a Chat Completions call that asked for several
	// answers ("n"), are the choices after the first (Output is the
	// first's), as inference.finished keeps them: the response's choice
	// objects. Absent otherwise.
	OtherChoices json.RawMessage `json:"other_choices,omitempty"`
	// Logprobs, for a Chat Completions call that asked for them, are its
	// first choice's log probabilities as inference.finished keeps them
	// ({"content": [...], "refusal": ...}); LogprobsOmitted their size
	// when they were too large to keep. Absent otherwise.
	Logprobs        json.RawMessage `json:"logprobs,omitempty"`
	LogprobsOmitted int             `json:"logprobs_omitted,omitempty"`
	// Findings are the rules the call's input broke, as `replay --check`
	// reports them (the same call numbers; a fault a later input still
	// carries is listed at the call that first received it only); never
	// null.
	Findings []check.Finding `json:"findings"`
	// Previous is the call whose input SincePrevious compares with: the
	// latest earlier call with the same Purpose (a compaction's summary is
	// compared with the previous summary, not with an answer); 0 when
	// there is none.
	Previous int `json:"previous,omitempty"`
	// SincePrevious is the diff-turns result (Diff) of the previous call's
	// input (A) against this call's (B): blocks added, removed, moved and
	// edited, and a changed system prompt. Null for the first call of its
	// purpose and when either input cannot be rebuilt from the log.
	SincePrevious *Result `json:"since_previous"`
}

// CallsPage is a page of a conversation's model calls (Calls).
type CallsPage struct {
	Conversation string `json:"conversation"`
	Calls        []Call `json:"calls"`
	// Total counts the conversation's model calls.
	Total int `json:"total"`
	// Next is the call to ask for next (from=Next), 0 on the last page.
	Next int `json:"next,omitempty"`
	// FindingsTotal counts the findings of all the conversation's calls,
	// not only of the page's: a reader shown one page learns of the
	// faults of the calls it has not loaded, and FindingCalls says where
	// they are.
	FindingsTotal int `json:"findings_total"`
	// FindingCalls numbers the calls that have findings, in order, over
	// the whole conversation; never null.
	FindingCalls []int `json:"finding_calls"`
}

// Page selects model calls by number: Limit calls from From (counting from
// 1). A zero From is 1; a Limit of 0 or less means all.
type Page struct {
	From, Limit int
}

func (p Page) has(call int) bool {
	from := max(p.From, 1)
	return call >= from && (p.Limit <= 0 || call < from+p.Limit)
}

// Calls re-projects a conversation and describes the model calls that page
// selects: when, which model, what it cost, how it ended, its output and
// what changed in its input since the previous call, and the findings of
// the rules of package check (as Check). The whole log is read (the Turns
// must be folded, and checked, from the first event) but only the
// selected calls are diffed and kept; the findings are counted over every
// call (FindingsTotal, FindingCalls).
func Calls(ctx context.Context, src Source, conversation string, page Page, opts ...Option) (*CallsPage, error) {
	o := collect(opts)
	o.quarantine = func(*eventlog.CorruptMessageError) error { return nil } // the timeline shows them
	out := &CallsPage{Conversation: conversation, Calls: []Call{}, FindingCalls: []int{}}
	var (
		index  int
		prev   = map[string]prevInput{} // latest input per purpose
		byID   = map[string]*Call{}     // selected calls not closed yet
		byWhy  = map[string]*Call{}     // latest selected call per cause, for its output
		picked []*Call
		chk    = NewChecker()
	)
	_, _, err := read(ctx, src, conversation, o, func(w *walker, r *eventlog.Record) error {
		if p, ok := r.Payload.(events.InferenceStarted); ok {
			index++
			input := callInput(w, p, r.Pos)
			// The Turn before an inference.started is the Turn after it,
			// as Entries feeds the checker.
			findings := chk.Observe(r.Event, r.Pos, w.turn)
			if len(findings) > 0 {
				out.FindingsTotal += len(findings)
				out.FindingCalls = append(out.FindingCalls, index)
			}
			if page.has(index) {
				c := &Call{Call: index, N: r.Pos, Time: r.Time, InferenceID: p.InferenceID, Model: p.Model,
					Provider: providerOf(p, ""), Purpose: p.Purpose, Threading: p.Gateway["threading"], Headers: calls.HeadersOfMeta(p.Gateway),
					InputHash: p.InputHash, InputBlocks: -1, WireSHA256: p.Gateway["wire_sha256"], Unparsed: p.Gateway["unparsed"],
					Status: CallOpen, Output: []events.Block{}, Findings: findings}
				if c.Findings == nil {
					c.Findings = []check.Finding{}
				}
				if input != nil {
					c.InputBlocks = len(input.Blocks)
				}
				c.Verified = inputVerified(w.turn, input, p)
				if pi, ok := prev[p.Purpose]; ok {
					c.Previous = pi.call
					if pi.turn != nil && input != nil {
						d := Diff(pi.turn, input)
						c.SincePrevious = &d
					}
				}
				picked = append(picked, c)
				byID[p.InferenceID] = c
				byWhy[r.Cause] = c
			} else {
				delete(byWhy, r.Cause)
			}
			pi := prevInput{call: index}
			if input != nil && (page.Limit <= 0 || index < max(page.From, 1)+page.Limit-1) {
				// Kept for the next call's diff: a copy, the fold goes on.
				pi.turn = input.Clone()
			}
			prev[p.Purpose] = pi
			return w.apply(r)
		}
		if err := w.apply(r); err != nil {
			return err
		}
		chk.Observe(r.Event, r.Pos, w.turn)
		switch p := r.Payload.(type) {
		case events.InferenceFinished:
			if c := byID[p.InferenceID]; c != nil {
				c.closedBy(p.Wire)
				c.Status = CallFinished
				c.LatencyMS = millis(p.Duration)
				if p.PromptTokens != 0 || p.CompletionTokens != 0 {
					c.Usage = &Usage{InputTokens: p.PromptTokens, OutputTokens: p.CompletionTokens}
				}
				if p.OtherChoices != "" && json.Valid([]byte(p.OtherChoices)) {
					c.OtherChoices = json.RawMessage(p.OtherChoices)
				}
				if p.Logprobs != "" && json.Valid([]byte(p.Logprobs)) {
					c.Logprobs = json.RawMessage(p.Logprobs)
				}
				c.LogprobsOmitted = p.LogprobsOmitted
				delete(byID, p.InferenceID)
			}
		case events.InferenceFailed:
			if c := byID[p.InferenceID]; c != nil {
				c.closedBy(p.Wire)
				c.Status, c.Error = CallFailed, p.Error
				c.LatencyMS = millis(p.Duration)
				for _, b := range p.Partial {
					c.Partial = append(c.Partial, b.Clone())
				}
				delete(byID, p.InferenceID)
			}
		case events.ReasoningAppended:
			addOutput(w, byWhy[r.Cause], p.BlockID)
		case events.LLMTextAppended:
			addOutput(w, byWhy[r.Cause], p.BlockID)
		case events.ToolCalled:
			addOutput(w, byWhy[r.Cause], p.BlockID)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("calls of %s: %w", conversation, err)
	}
	for _, c := range picked {
		if c.Status == CallFailed {
			// A failed call's partial output is not the model's answer.
			c.Output = []events.Block{}
		}
		out.Calls = append(out.Calls, *c)
	}
	out.Total = index
	if page.Limit > 0 {
		if next := max(page.From, 1) + page.Limit; next <= index {
			out.Next = next
		}
	}
	return out, nil
}

// closedBy takes from the event that closed the call the request it sent,
// which a worker's engine records there (the gateway records the client's
// bytes' hash in inference.started).
func (c *Call) closedBy(w events.Wire) {
	if c.WireSHA256 == "" {
		c.WireSHA256 = w.SHA256
	}
	if c.Provider == "" {
		c.Provider = providerOf(events.InferenceStarted{}, w.Version)
	}
}

// prevInput is the input of the latest call of a purpose; turn is nil
// when the log cannot rebuild it or no later selected call needs it.
type prevInput struct {
	call int
	turn *projector.Turn
}

// callInput is the input a model call received, rebuilt from the Turn as
// it stood at the call; nil when the log cannot rebuild it.
func callInput(w *walker, p events.InferenceStarted, n int) *projector.Turn {
	switch {
	case p.Gateway["unparsed"] != "":
		return nil // the gateway could not read the request
	case p.Gateway != nil && len(p.InputBlocks) > 0:
		// A gateway call that continued a response on the provider's
		// side (previous_response_id): its input is the blocks it names.
		in := &projector.Turn{Conversation: w.turn.Conversation, Data: w.turn.Data}
		for _, id := range p.InputBlocks {
			b, ok := w.turn.Block(id)
			if !ok {
				return nil
			}
			in.Blocks = append(in.Blocks, b)
		}
		return in
	case isAside(p):
		in, _, err := asideInput(w.turn, p, n)
		if err != nil {
			return nil
		}
		return in
	}
	return w.turn
}

// addOutput appends to c's output the block an event just appended.
func addOutput(w *walker, c *Call, id string) {
	if c == nil {
		return
	}
	if b, ok := w.turn.Block(id); ok {
		c.Output = append(c.Output, b.Clone())
	}
}

func millis(d time.Duration) *float64 {
	if d == 0 {
		return nil // unknown: a logged call imported without its duration
	}
	ms := float64(d.Microseconds()) / 1000
	return &ms
}

// providerOf names whom a call went to, from what the log recorded: the
// gateway's API, else the rendering of the engine's wire request
// ("openai-chat/1"), whose engine names the provider.
func providerOf(p events.InferenceStarted, wireVersion string) string {
	switch p.Gateway["api"] {
	case "chat.completions", "responses":
		return "openai"
	case "messages":
		return "anthropic"
	}
	engine, _, _ := strings.Cut(wireVersion, "/")
	switch {
	case engine == "":
		return ""
	case strings.HasPrefix(engine, "openai"):
		return "openai"
	case strings.HasPrefix(engine, "anthropic"):
		return "anthropic"
	case engine == "scripted":
		return "turnlog.scripted"
	}
	return engine
}
