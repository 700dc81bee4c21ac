package calls

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Output is what a call's response says, as the gateway records it.
type Output struct {
	// Items are the model's output items (Chat Completions: the first
	// choice's message; Messages: the assistant message; Responses: each
	// output item).
	Items []Item
	// ResponseID is the response's ID (Responses: what a later call's
	// previous_response_id names).
	ResponseID string
	// Model is the model the response says answered (a trace span's
	// gen_ai.response.model; "" when it names none).
	Model            string
	PromptTokens     int
	CompletionTokens int
	StopReason       string
	// Error is set when the response reports a failure (an error object, a
	// failed or incomplete status, a stream's error event).
	Error string
	// Background is set for a Responses API background response still
	// queued or in progress: the call's output is not in the response
	// (the app fetches it later, see PlanBackgroundOutcome), though its ID
	// continues the provider's history.
	Background bool
	// Took, for a Responses API response that says when it was created
	// and completed (created_at, completed_at: whole seconds), is the
	// time between: a background call's duration, which the gateway
	// cannot see (zero when the response does not say).
	Took time.Duration
	// ErrorTransient says a retry may succeed where the error is one the
	// provider names so (an overloaded or rate-limited model, a server
	// error), as a stream's error event after a 200 does.
	ErrorTransient bool
	// OtherChoices, for a Chat Completions response of more than one
	// choice (the request's "n"), is the JSON array of the choices after
	// the first (events.InferenceFinished.OtherChoices); Items are the
	// first's.
	OtherChoices string
	// Logprobs, for a Chat Completions call that asked for them, is the
	// first choice's logprobs object (events.InferenceFinished.Logprobs),
	// or "" with LogprobsOmitted its size when it is larger than
	// MaxLogprobsBytes.
	Logprobs        string
	LogprobsOmitted int
}

// MaxLogprobsBytes bounds the logprobs a call's record keeps: a long answer
// with many top_logprobs has megabytes of them, which would make its
// outcome too large to store (and the answer with it) on a server of
// NATS's default 1 MiB max_payload. Past it the record keeps their size
// (events.InferenceFinished.LogprobsOmitted).
const MaxLogprobsBytes = 256 << 10

// keepLogprobs sets o's logprobs from raw, the first choice's logprobs
// member as written (null or absent: none).
func (o *Output) keepLogprobs(raw []byte) {
	if len(raw) == 0 || string(raw) == "null" {
		return
	}
	if len(raw) > MaxLogprobsBytes {
		o.LogprobsOmitted = len(raw)
		return
	}
	o.Logprobs = string(raw)
}

// usage is a response's token counts, in the names of the three APIs.
// The Messages API counts the prompt's cached part apart from
// input_tokens; Chat Completions' prompt_tokens and the Responses API's
// input_tokens include theirs.
type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	InputTokens         int `json:"input_tokens"`
	OutputTokens        int `json:"output_tokens"`
	CacheCreationTokens int `json:"cache_creation_input_tokens"`
	CacheReadTokens     int `json:"cache_read_input_tokens"`
}

func (u *usage) fill(o *Output) {
	if u == nil {
		return
	}
	o.PromptTokens = max(u.PromptTokens, u.InputTokens+u.CacheCreationTokens+u.CacheReadTokens)
	o.CompletionTokens = max(u.CompletionTokens, u.OutputTokens)
}

type apiError struct {
	Type    string `json:"type"`
	Code    any    `json:"code"`
	Message string `json:"message"`
}

// transient reports whether e is an error a retry may get past, by the
// type Anthropic's and OpenAI's APIs give it.
func (e *apiError) transient() bool {
	if e == nil {
		return false
	}
	switch e.Type {
	case "overloaded_error", "api_error", "rate_limit_error", "server_error", "rate_limit_exceeded":
		return true
	}
	return false
}

func (e *apiError) String() string {
	if e == nil {
		return ""
	}
	if e.Type != "" {
		return e.Type + ": " + e.Message
	}
	return e.Message
}

// ErrorMessage reads the error a provider answered (OpenAI's and
// Anthropic's error shapes), for the record of a failed call; "" when body
// says nothing readable.
func ErrorMessage(body []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || len(e.Error) == 0 {
		return ""
	}
	var obj apiError
	if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
		return obj.String()
	}
	var s string
	if json.Unmarshal(e.Error, &s) == nil {
		return s
	}
	return ""
}

// ParseResponse reads a response body (not streamed) of api.
func ParseResponse(api API, body []byte) (*Output, error) {
	var o *Output
	var err error
	switch api {
	case ChatCompletions:
		o, err = parseChatResponse(body)
	case Responses:
		o, err = parseResponsesObject(body)
	case Messages:
		o, err = parseMessagesResponse(body)
	default:
		return nil, fmt.Errorf("unknown api %q", api)
	}
	return o, shapeError(err)
}

// shapeError says a JSON member of the wrong type in JSON's words (a
// string where an array belongs), not Go's (the struct field and Go type
// encoding/json names); any other error is returned as it is.
func shapeError(err error) error {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) || te.Type == nil {
		return err
	}
	want := "a value of another type"
	switch te.Type.Kind() {
	case reflect.Slice, reflect.Array:
		want = "an array"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		want = "a number"
	}
	where := "a member"
	if f := strings.TrimPrefix(te.Field, "."); f != "" {
		where = fmt.Sprintf("%q", f)
	}
	return fmt.Errorf("%s is a JSON %s where %s belongs", where, te.Value, want)
}

// parseChatResponse reads a Chat Completions response: the body is
// validated, its members found by the scanner (decodeChatResponse), and
// only what that leaves goes to encoding/json.
func parseChatResponse(body []byte) (*Output, error) {
	var r chatResponse
	if !json.Valid(body) || decodeChatResponse(body, &r) != nil {
		return parseChatResponseJSON(body)
	}
	o := &Output{ResponseID: r.ID, Model: r.Model, StopReason: r.FinishReason, Error: r.Error.String()}
	o.keepLogprobs(r.Logprobs)
	o.OtherChoices = jsonArray(boundOtherLogprobs(r.Others, o.othersBudget()))
	r.Usage.fill(o)
	if !r.HasChoice {
		return o, nil
	}
	bs, err := chatBlocks(r.Message)
	if err != nil {
		return nil, fmt.Errorf("response message: %w", err)
	}
	it, err := newItem(ChatCompletions, "", r.Message, bs)
	if err != nil {
		return nil, err
	}
	o.Items = append(o.Items, it)
	return o, nil
}

// parseChatResponseJSON is parseChatResponse by encoding/json, for what
// decodeChatResponse leaves to it.
func parseChatResponseJSON(body []byte) (*Output, error) {
	var r struct {
		ID      string            `json:"id"`
		Model   string            `json:"model"`
		Choices []json.RawMessage `json:"choices"`
		Usage   *usage            `json:"usage"`
		Error   *apiError         `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	o := &Output{ResponseID: r.ID, Model: r.Model, Error: r.Error.String()}
	r.Usage.fill(o)
	if len(r.Choices) > 0 {
		var c struct {
			Message      json.RawMessage `json:"message"`
			FinishReason string          `json:"finish_reason"`
			Logprobs     json.RawMessage `json:"logprobs"`
		}
		if err := json.Unmarshal(r.Choices[0], &c); err != nil {
			return nil, fmt.Errorf("response: choices[0]: %w", err)
		}
		o.StopReason = c.FinishReason
		o.keepLogprobs(c.Logprobs)
		if len(r.Choices) > 1 {
			o.OtherChoices = jsonArray(boundOtherLogprobs(r.Choices[1:], o.othersBudget()))
		}
		bs, err := chatBlocks(c.Message)
		if err != nil {
			return nil, fmt.Errorf("response message: %w", err)
		}
		it, err := newItem(ChatCompletions, "", c.Message, bs)
		if err != nil {
			return nil, err
		}
		o.Items = append(o.Items, it)
	}
	return o, nil
}

// parseMessagesResponse reads a Messages API response.
func parseMessagesResponse(body []byte) (*Output, error) {
	var r struct {
		ID         string          `json:"id"`
		Model      string          `json:"model"`
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		StopReason string          `json:"stop_reason"`
		Usage      *usage          `json:"usage"`
		Error      *apiError       `json:"error"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	o := &Output{ResponseID: r.ID, Model: r.Model, StopReason: r.StopReason, Error: r.Error.String()}
	r.Usage.fill(o)
	if len(r.Content) > 0 {
		parts, raws, err := readBlocks(r.Content)
		if err != nil {
			return nil, fmt.Errorf("response content: %w", err)
		}
		bs, err := anthropicBlocks(events.KindLLMText, parts, raws)
		if err != nil {
			return nil, err
		}
		if len(bs) > 0 {
			// What an SDK user sends back: {"role": "assistant",
			// "content": response.content}.
			msg := joinObject(map[string][]byte{"role": appendString(nil, "assistant"), "content": r.Content})
			it, err := newItem(Messages, "", msg, bs)
			if err != nil {
				return nil, err
			}
			o.Items = append(o.Items, it)
		}
	}
	return o, nil
}

// parseResponsesObject reads a Responses API response object.
func parseResponsesObject(body []byte) (*Output, error) {
	var r struct {
		ID                string            `json:"id"`
		Model             string            `json:"model"`
		Status            string            `json:"status"`
		CreatedAt         int64             `json:"created_at"`
		CompletedAt       int64             `json:"completed_at"`
		Output            []json.RawMessage `json:"output"`
		Usage             *usage            `json:"usage"`
		Error             *apiError         `json:"error"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("response: %w", err)
	}
	o := &Output{ResponseID: r.ID, Model: r.Model, StopReason: r.Status, Error: r.Error.String()}
	if r.Status == "incomplete" && r.IncompleteDetails != nil {
		o.StopReason = "incomplete: " + r.IncompleteDetails.Reason
	}
	if r.Status == "failed" && o.Error == "" {
		o.Error = "response failed"
	}
	if (r.Status == "queued" || r.Status == "in_progress") && o.Error == "" {
		// A background response (background: true): the provider runs
		// the call later, and its output is fetched from it.
		o.Background = true
	}
	if r.Status == "cancelled" && o.Error == "" {
		o.Error = "response cancelled"
	}
	if r.CreatedAt > 0 && r.CompletedAt >= r.CreatedAt {
		o.Took = time.Duration(r.CompletedAt-r.CreatedAt) * time.Second
	}
	r.Usage.fill(o)
	for i, raw := range r.Output {
		bs, err := responsesBlocks(raw)
		if err != nil {
			return nil, fmt.Errorf("output[%d]: %w", i, err)
		}
		it, err := newItem(Responses, "", raw, bs)
		if err != nil {
			return nil, err
		}
		o.Items = append(o.Items, it)
	}
	return o, nil
}

// Blocks returns the output's blocks in order.
func (o *Output) Blocks() []events.Block {
	var bs []events.Block
	for _, it := range o.Items {
		bs = append(bs, it.Blocks...)
	}
	return bs
}

// Keys returns the content keys (Key) of Blocks, as the items computed
// them when they were read.
func (o *Output) Keys() [][32]byte {
	var ks [][32]byte
	for i := range o.Items {
		ks = append(ks, o.Items[i].keys()...)
	}
	return ks
}

// summary is a short description of an error body, for a failed call's
// reason.
func summary(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// jsonArray joins JSON values into an array ("" for none).
func jsonArray(vs []json.RawMessage) string {
	if len(vs) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('[')
	for i, v := range vs {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(v)
	}
	b.WriteByte(']')
	return b.String()
}
