package responses

import (
	"cmp"
	"context"
	"fmt"
	"mime"
	"net/http"
	"slices"

	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// inferStream makes one streaming request. Deltas of the answer's text and
// of the reasoning (summary, or reasoning text where a server sends it)
// go to delta as they arrive; the blocks come from the response the
// terminal event carries (response.completed or response.incomplete), which
// holds every output item whole: reasoning with its encrypted content,
// messages, function calls with their arguments.
func (e *Engine) inferStream(ctx context.Context, params responses.ResponseNewParams, delta func(engine.Delta)) (engine.Output, error) {
	var httpResp *http.Response
	stream := e.service.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer stream.Close()

	type doneItem struct {
		index int64
		item  responses.ResponseOutputItemUnion
	}
	var (
		final *responses.Response
		done  []doneItem
		n     int
	)
	for stream.Next() {
		n++
		ev := stream.Current()
		switch ev.Type {
		case "response.output_text.delta", "response.refusal.delta":
			delta(engine.Delta{Kind: events.KindLLMText, Text: ev.Delta})
		case "response.reasoning_summary_text.delta", "response.reasoning_text.delta":
			delta(engine.Delta{Kind: events.KindReasoning, Text: ev.Delta})
		case "response.reasoning_summary_part.added":
			if ev.SummaryIndex > 0 {
				// The stored text joins parts with a blank line; so do the deltas.
				delta(engine.Delta{Kind: events.KindReasoning, Text: "\n\n"})
			}
		case "response.output_item.done":
			done = append(done, doneItem{ev.OutputIndex, ev.Item})
		case "response.completed", "response.incomplete":
			r := ev.Response
			final = &r
		case "response.failed":
			return engine.Output{}, e.failure(string(ev.Response.Error.Code), ev.Response.Error.Message)
		case "error":
			return engine.Output{}, e.failure(ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		return engine.Output{}, e.classify(ctx, err, httpResp)
	}
	if final == nil {
		if n == 0 && httpResp != nil && !isEventStream(httpResp) {
			return engine.Output{}, fmt.Errorf("the server answered with %q, not an event stream; set Config.Stream to false for servers that cannot stream",
				httpResp.Header.Get("Content-Type"))
		}
		return engine.Output{}, engine.Transient(incompleteStream(n))
	}
	if len(final.Output) == 0 && len(done) > 0 {
		// Some servers leave the terminal response's output empty; the
		// items arrived whole in response.output_item.done.
		slices.SortStableFunc(done, func(a, b doneItem) int { return cmp.Compare(a.index, b.index) })
		for _, d := range done {
			final.Output = append(final.Output, d.item)
		}
	}
	return output(final)
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}
