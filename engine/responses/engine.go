package responses

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

var _ engine.Engine = (*Engine)(nil)

// Engine calls a Responses API endpoint. It holds no per-call state, so one
// Engine may serve any number of concurrent Infer calls.
type Engine struct {
	service responses.ResponseService
	cfg     Config
	apiKey  string // kept only to redact it from server messages
}

// New returns an Engine for cfg, or an error naming what in cfg cannot
// work. It reads no environment variable and makes no request.
func New(cfg Config) (*Engine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("openai_responses: invalid config: %w", err)
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
		// turnlog's retry middleware decides what to retry (see engine/openai).
		option.WithMaxRetries(0),
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	// The service, not a client: a client would apply the process's
	// OPENAI_* variables too (see engine/openai.New).
	return &Engine{service: responses.NewResponseService(opts...), cfg: cfg, apiKey: cfg.APIKey}, nil
}

// Infer implements engine.Engine: it renders in.Turn as input items, calls
// the server statelessly and returns the output items as blocks, passing
// text and reasoning summaries to delta as they arrive.
func (e *Engine) Infer(ctx context.Context, in engine.Input, delta func(engine.Delta)) (engine.Output, error) {
	model := in.Model
	if model == "" {
		model = e.cfg.Model
	}
	if model == "" {
		return engine.Output{}, fmt.Errorf("openai_responses: %w: set the profile's model (or %s) or name one in the request", ErrNoModel, EnvModel)
	}
	if in.Turn == nil {
		return engine.Output{}, errors.New("openai_responses: input has no Turn")
	}
	input, err := render(in.Turn.Blocks, nil)
	if err != nil {
		return engine.Output{}, fmt.Errorf("openai_responses: render turn: %w", err)
	}
	toolParams, err := tools(in.Tools)
	if err != nil {
		return engine.Output{}, fmt.Errorf("openai_responses: declare tools: %w", err)
	}
	if delta == nil {
		delta = func(engine.Delta) {}
	}
	params := e.params(model, input, toolParams)
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
		return engine.Output{}, fmt.Errorf("openai_responses: response with model %q: %w", model, err)
	}
	return out, nil
}

// params is the request: stateless, with the encrypted reasoning asked
// for, so that nothing of the conversation lives on the server and every
// reasoning item can be sent back.
func (e *Engine) params(model string, input responses.ResponseInputParam, toolParams []responses.ToolUnionParam) responses.ResponseNewParams {
	p := responses.ResponseNewParams{
		Model:   shared.ResponsesModel(model),
		Input:   responses.ResponseNewParamsInputUnion{OfInputItemList: input},
		Store:   param.NewOpt(false),
		Include: []responses.ResponseIncludable{responses.ResponseIncludableReasoningEncryptedContent},
		Tools:   toolParams,
	}
	if e.cfg.MaxOutputTokens > 0 {
		p.MaxOutputTokens = param.NewOpt(int64(e.cfg.MaxOutputTokens))
	}
	if e.cfg.ReasoningEffort != "" {
		p.Reasoning.Effort = shared.ReasoningEffort(e.cfg.ReasoningEffort)
	}
	if s := e.cfg.ReasoningSummary; s != "" && s != "none" {
		p.Reasoning.Summary = shared.ReasoningSummary(s)
	}
	return p
}

// inferOnce makes one blocking request.
func (e *Engine) inferOnce(ctx context.Context, params responses.ResponseNewParams, delta func(engine.Delta)) (engine.Output, error) {
	var httpResp *http.Response
	resp, err := e.service.New(ctx, params, option.WithResponseInto(&httpResp))
	if err != nil {
		return engine.Output{}, e.classify(ctx, err, httpResp)
	}
	if resp.Status == "failed" {
		return engine.Output{}, e.failure(string(resp.Error.Code), resp.Error.Message)
	}
	out, err := output(resp)
	if err != nil {
		return engine.Output{}, err
	}
	// Everything arrived at once; live clients still get it as deltas.
	for _, b := range out.Blocks {
		if (b.Kind == events.KindReasoning || b.Kind == events.KindLLMText) && b.Text != "" {
			delta(engine.Delta{Kind: b.Kind, Text: b.Text})
		}
	}
	return out, nil
}

// Provider names the provider for trace spans (gen_ai.provider.name).
func (e *Engine) Provider() string { return "openai" }
