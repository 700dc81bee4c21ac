package anthropic

import (
	"context"
	"fmt"
	"mime"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// inferStream makes one streaming request and accumulates it with the
// SDK's Message.Accumulate, which appends thinking, signature, text and
// tool input deltas to their blocks in order. Text and thinking deltas go
// to delta as they arrive. A stream that ends before message_stop is
// incomplete (a transient error): what arrived is not the whole answer,
// and a signature cut short could never be sent back.
func (e *Engine) inferStream(ctx context.Context, params sdk.MessageNewParams, delta func(engine.Delta)) (engine.Output, error) {
	var httpResp *http.Response
	stream := e.messages.NewStreaming(ctx, params, option.WithResponseInto(&httpResp))
	defer stream.Close()

	var (
		msg     sdk.Message
		n       int
		stopped bool
	)
	for stream.Next() {
		n++
		ev := stream.Current()
		if err := msg.Accumulate(ev); err != nil {
			return engine.Output{}, fmt.Errorf("the stream is out of order at event %d (%s): %w", n, ev.Type, err)
		}
		switch ev.Type {
		case "content_block_delta":
			switch ev.Delta.Type {
			case "text_delta":
				delta(engine.Delta{Kind: events.KindLLMText, Text: ev.Delta.Text})
			case "thinking_delta":
				delta(engine.Delta{Kind: events.KindReasoning, Text: ev.Delta.Thinking})
			}
		case "message_stop":
			stopped = true
		}
	}
	if err := stream.Err(); err != nil {
		return engine.Output{}, e.classify(ctx, err, httpResp)
	}
	if !stopped {
		if n == 0 && httpResp != nil && !isEventStream(httpResp) {
			return engine.Output{}, fmt.Errorf("the server answered with %q, not an event stream; set Config.Stream to false for servers that cannot stream",
				httpResp.Header.Get("Content-Type"))
		}
		return engine.Output{}, engine.Transient(fmt.Errorf("the stream ended after %d events without message_stop; the answer is incomplete", n))
	}
	return output(&msg)
}

func isEventStream(resp *http.Response) bool {
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	return mt == "text/event-stream"
}
