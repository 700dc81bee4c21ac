package openai

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/respjson"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

var _ engine.Engine = (*Engine)(nil)

// Engine calls a Chat Completions endpoint. It holds no per-call state, so
// one Engine may serve any number of concurrent Infer calls.
type Engine struct {
	completions oai.ChatCompletionService
	model       string
	apiKey      string // kept only to redact it from server messages
	stream      bool
}

// New returns an Engine for cfg, or an error naming what in cfg cannot
// work. It reads no environment variable (see ConfigFromEnv) and makes no
// request: a server that is down is reported by the first Infer, as a
// transient error.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("openai: invalid config: %w", err)
	}
	baseURL := cfg.BaseURL
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	// Every request's body is recorded as it goes to the server (see
	// engine.WireTransport).
	client := engine.WireClient(cfg.HTTPClient)
	opts := []option.RequestOption{
		option.WithBaseURL(baseURL),
		option.WithHTTPClient(client),
		// turnlog's retry middleware retries what engine.Transient marks;
		// retries here too would multiply attempts and hide them from the
		// log.
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	return &Engine{
		// The service, not oai.NewClient: NewClient also applies the
		// process's OPENAI_* variables (organization, project, custom
		// headers, key), which would leak OpenAI credentials to another
		// server configured here.
		completions: oai.NewChatCompletionService(opts...),
		model:       cfg.Model,
		apiKey:      cfg.APIKey,
		stream:      cfg.Stream,
	}, nil
}

// Infer implements engine.Engine: it renders in.Turn as messages, calls the
// server (streaming when Config.Stream is set, passing text and reasoning
// to delta as they arrive) and returns reasoning, text and tool calls as
// blocks, in that order.
func (e *Engine) Infer(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
	model := in.Model
	if model == "" {
		model = e.model
	}
	if model == "" {
		return engine.Output{}, fmt.Errorf("openai: %w: set Config.Model (%s) or name one in the request", ErrNoModel, EnvModel)
	}
	if in.Turn == nil {
		return engine.Output{}, errors.New("openai: input has no Turn")
	}
	msgs, err := messages(in.Turn.Blocks, nil)
	if err != nil {
		return engine.Output{}, fmt.Errorf("openai: render turn: %w", err)
	}
	toolParams, err := tools(in.Tools)
	if err != nil {
		return engine.Output{}, fmt.Errorf("openai: declare tools: %w", err)
	}
	params := oai.ChatCompletionNewParams{Model: model, Messages: msgs, Tools: toolParams}
	if err := describeWire(ctx, wireParams{Model: model, Stream: e.stream, Tools: in.Tools}); err != nil {
		return engine.Output{}, err
	}
	if delta == nil {
		delta = func(engine.Delta) {}
	}

	var out engine.Output
	if e.stream {
		out, err = e.inferStream(ctx, params, delta)
	} else {
		out, err = e.inferOnce(ctx, params, delta)
	}
	if err != nil {
		return engine.Output{}, fmt.Errorf("openai: chat completion with model %q: %w", model, err)
	}
	return out, nil
}

// inferOnce makes one blocking request.
func (e *Engine) inferOnce(ctx context.Context, params oai.ChatCompletionNewParams, delta func(engine.Delta)) (engine.Output, error) {
	var resp *http.Response
	cc, err := e.completions.New(ctx, params, option.WithResponseInto(&resp))
	if err != nil {
		return engine.Output{}, e.classify(ctx, err, resp)
	}
	if len(cc.Choices) == 0 {
		return engine.Output{}, errors.New("the response has no choices")
	}
	choice := cc.Choices[0]
	msg := choice.Message
	var r result
	r.id, r.model = cc.ID, cc.Model
	r.reasoning.WriteString(reasoningText(msg.JSON.ExtraFields))
	r.text.WriteString(msg.Content)
	r.refusal.WriteString(msg.Refusal)
	for i, tc := range msg.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			return engine.Output{}, fmt.Errorf("the model made a %q tool call; only function tools are declared", tc.Type)
		}
		c := &toolCall{index: int64(i), id: tc.ID, name: tc.Function.Name}
		c.args.WriteString(tc.Function.Arguments)
		r.calls = append(r.calls, c)
	}
	r.finish = choice.FinishReason
	r.usage = cc.Usage
	// Everything arrived at once; live clients still get it as deltas, so
	// they need not care whether the engine streams.
	if s := r.reasoning.String(); s != "" {
		delta(engine.Delta{Kind: events.KindReasoning, Text: s})
	}
	if s := r.answer(); s != "" {
		delta(engine.Delta{Kind: events.KindLLMText, Text: s})
	}
	return r.output()
}

// inferStream makes one streaming request and accumulates it.
func (e *Engine) inferStream(ctx context.Context, params oai.ChatCompletionNewParams, delta func(engine.Delta)) (engine.Output, error) {
	params.StreamOptions.IncludeUsage = oai.Bool(true)
	var resp *http.Response
	stream := e.completions.NewStreaming(ctx, params, option.WithResponseInto(&resp))
	defer stream.Close()

	var (
		r      result
		chunks int
	)
	for stream.Next() {
		chunks++
		r.add(stream.Current(), delta)
	}
	if err := stream.Err(); err != nil {
		return engine.Output{}, e.classify(ctx, err, resp)
	}
	if r.finish == "" {
		if chunks == 0 && resp != nil && !isEventStream(resp) {
			return engine.Output{}, fmt.Errorf("the server answered with %q, not an event stream; set Config.Stream to false for servers that cannot stream",
				resp.Header.Get("Content-Type"))
		}
		// The connection ended cleanly but the answer did not: a proxy or
		// the server gave up mid-answer. What arrived is incomplete.
		return engine.Output{}, engine.Transient(fmt.Errorf("the stream ended after %d chunks without a finish_reason; the answer is incomplete", chunks))
	}
	return r.output()
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}

// result accumulates one answer, from a response or from stream chunks.
type result struct {
	reasoning, text, refusal strings.Builder
	calls                    []*toolCall
	byIndex                  map[int64]*toolCall
	finish                   string
	usage                    oai.CompletionUsage
	id, model                string
}

type toolCall struct {
	index    int64
	id, name string
	args     strings.Builder
}

// add folds one chunk of choice 0 (n is never set, so there is no other).
// A tool call's ID and name arrive whole, in its first chunk; later chunks
// carry pieces of the arguments, identified by the call's index. Usage
// comes in its own last chunk; when a server repeats it on every chunk,
// the last one, which counts everything, wins.
func (r *result) add(chunk oai.ChatCompletionChunk, delta func(engine.Delta)) {
	if chunk.JSON.Usage.Valid() {
		r.usage = chunk.Usage
	}
	if r.id == "" {
		r.id, r.model = chunk.ID, chunk.Model
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 {
			continue
		}
		d := ch.Delta
		if s := reasoningText(d.JSON.ExtraFields); s != "" {
			r.reasoning.WriteString(s)
			delta(engine.Delta{Kind: events.KindReasoning, Text: s})
		}
		if d.Content != "" {
			r.text.WriteString(d.Content)
			delta(engine.Delta{Kind: events.KindLLMText, Text: d.Content})
		}
		if d.Refusal != "" {
			r.refusal.WriteString(d.Refusal)
			delta(engine.Delta{Kind: events.KindLLMText, Text: d.Refusal})
		}
		for _, tc := range d.ToolCalls {
			if r.byIndex == nil {
				r.byIndex = map[int64]*toolCall{}
			}
			c, ok := r.byIndex[tc.Index]
			if !ok {
				c = &toolCall{index: tc.Index}
				r.byIndex[tc.Index] = c
				r.calls = append(r.calls, c)
			}
			if c.id == "" {
				c.id = tc.ID
			}
			if c.name == "" {
				c.name = tc.Function.Name
			}
			c.args.WriteString(tc.Function.Arguments)
		}
		if ch.FinishReason != "" {
			r.finish = ch.FinishReason
		}
	}
}

// output returns the blocks in the order the model produced them: its
// reasoning, then its text, then its tool calls.
func (r *result) output() (engine.Output, error) {
	out := engine.Output{
		StopReason:    r.finish,
		ResponseID:    r.id,
		ResponseModel: r.model,
		Usage: engine.Usage{
			PromptTokens:     int(r.usage.PromptTokens),
			CompletionTokens: int(r.usage.CompletionTokens),
		},
	}
	if s := r.reasoning.String(); s != "" {
		out.Blocks = append(out.Blocks, events.Block{Kind: events.KindReasoning, Text: s})
	}
	if text := r.answer(); text != "" {
		out.Blocks = append(out.Blocks, events.Block{Kind: events.KindLLMText, Text: text})
	}
	slices.SortStableFunc(r.calls, func(a, b *toolCall) int { return cmp.Compare(a.index, b.index) })
	for i, c := range r.calls {
		if c.name == "" {
			return engine.Output{}, fmt.Errorf("tool call %d has no function name", i)
		}
		id := c.id
		if id == "" {
			// Some servers omit IDs. The chain needs one to pair the
			// call with its result, and a counter would repeat across
			// model calls of the same conversation.
			id = newCallID()
		}
		out.Blocks = append(out.Blocks, events.Block{
			Kind:      events.KindToolCall,
			CallID:    id,
			ToolName:  c.name,
			Arguments: c.args.String(),
		})
	}
	return out, nil
}

// answer is the text of the answer: its content, or when there is none its
// refusal, which is the model's answer too; dropping it would leave the
// Turn without one.
func (r *result) answer() string {
	if s := r.text.String(); s != "" {
		return s
	}
	return r.refusal.String()
}

// reasoningText reads the reasoning a server returned in a non-standard
// field of a message or delta: reasoning_content (DeepSeek, vLLM,
// llama.cpp) or reasoning (Ollama, OpenRouter, newer vLLM). When both are
// present they carry the same text, so only the first is taken.
func reasoningText(extra map[string]respjson.Field) string {
	for _, key := range []string{"reasoning_content", "reasoning"} {
		// The SDK keeps unknown fields with their raw JSON but marks them
		// invalid (they are not in its schema), so Valid cannot be used.
		var s string
		if json.Unmarshal([]byte(extra[key].Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

func newCallID() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails.
	return "call_" + hex.EncodeToString(b[:])
}

// Provider names the provider for trace spans (gen_ai.provider.name).
func (e *Engine) Provider() string { return "openai" }
