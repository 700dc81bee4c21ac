package anthropic

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

var _ engine.Engine = (*Engine)(nil)

// Engine calls an Anthropic Messages endpoint. It holds no per-call state,
// so one Engine may serve any number of concurrent Infer calls.
type Engine struct {
	messages sdk.MessageService
	cfg      Config
	apiKey   string // kept only to redact it from server messages
}

// New returns an Engine for cfg, or an error naming what in cfg cannot
// work. It reads no environment variable and makes no request.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("anthropic: invalid config: %w", err)
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = DefaultBaseURL
	}
	// Every request's body is recorded as it goes to the server (see
	// engine.WireTransport).
	client := engine.WireClient(cfg.HTTPClient)
	opts := []option.RequestOption{
		option.WithBaseURL(cfg.BaseURL),
		option.WithHTTPClient(client),
		// turnlog's retry middleware decides what to retry.
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// The service, not sdk.NewClient: NewClient walks the SDK's credential
	// chain (ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, profiles, custom
	// headers), which would send this process's credentials to whatever
	// server a profile names.
	return &Engine{messages: sdk.NewMessageService(opts...), cfg: cfg, apiKey: cfg.APIKey}, nil
}

// Infer implements engine.Engine: it renders in.Turn as a system field and
// messages, calls the server (streaming when Config.Stream is set, passing
// text and thinking to delta as they arrive) and returns thinking, text
// and tool calls as blocks, in the order of the answer.
func (e *Engine) Infer(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
	model := in.Model
	if model == "" {
		model = e.cfg.Model
	}
	if model == "" {
		return engine.Output{}, fmt.Errorf("anthropic: %w: set the profile's model (or %s) or name one in the request", ErrNoModel, EnvModel)
	}
	if in.Turn == nil {
		return engine.Output{}, errors.New("anthropic: input has no Turn")
	}
	req, err := render(in.Turn.Blocks, nil)
	if err != nil {
		return engine.Output{}, fmt.Errorf("anthropic: render turn: %w", err)
	}
	toolParams, err := tools(in.Tools)
	if err != nil {
		return engine.Output{}, fmt.Errorf("anthropic: declare tools: %w", err)
	}
	if delta == nil {
		delta = func(engine.Delta) {}
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(model),
		MaxTokens: int64(e.cfg.maxTokens()),
		System:    req.system,
		Messages:  req.messages,
		Tools:     toolParams,
	}
	switch t := e.cfg.Thinking; {
	case t.Adaptive:
		params.Thinking = sdk.ThinkingConfigParamUnion{OfAdaptive: &sdk.ThinkingConfigAdaptiveParam{}}
	case t.Budget > 0:
		params.Thinking = sdk.ThinkingConfigParamUnion{OfEnabled: &sdk.ThinkingConfigEnabledParam{BudgetTokens: int64(t.Budget)}}
	}
	if err := e.describeWire(ctx, model, in.Tools); err != nil {
		return engine.Output{}, err
	}
	var out engine.Output
	if e.cfg.Stream {
		out, err = e.inferStream(ctx, params, delta)
	} else {
		out, err = e.inferOnce(ctx, params, delta)
	}
	if err != nil {
		return engine.Output{}, fmt.Errorf("anthropic: message with model %q: %w", model, err)
	}
	return out, nil
}

// inferOnce makes one blocking request.
func (e *Engine) inferOnce(ctx context.Context, params sdk.MessageNewParams, delta func(engine.Delta)) (engine.Output, error) {
	var httpResp *http.Response
	msg, err := e.messages.New(ctx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		return engine.Output{}, e.classify(ctx, err, httpResp)
	}
	out, err := output(msg)
	if err != nil {
		return engine.Output{}, err
	}
	for _, b := range out.Blocks {
		if (b.Kind == events.KindReasoning || b.Kind == events.KindLLMText) && b.Text != "" {
			delta(engine.Delta{Kind: b.Kind, Text: b.Text})
		}
	}
	return out, nil
}

// Provider names the provider for trace spans (gen_ai.provider.name).
func (e *Engine) Provider() string { return "anthropic" }
