package benchmark

import (
	"context"
	"testing"
)

// TestRunWorkersSmall runs the end-to-end workers benchmark at a small size:
// every request completes and the figures are filled in.
func TestRunWorkersSmall(t *testing.T) {
	res, err := RunWorkers(context.Background(), WorkersConfig{Workers: 2, Conversations: 20, PerConv: 5})
	if err != nil {
		t.Fatal(err)
	}
	if res.RequestsPerS <= 0 || res.RawBoundRequestsPerS <= 0 || res.RawMessageBoundRequestsPerS <= 0 {
		t.Fatalf("figures missing: %+v", res)
	}
	// A request without tool calls is the request message and two steps:
	// its input with the model call, its answer with request.completed.
	if res.MessagesPerRequest != 3 {
		t.Errorf("messages per request = %v, want 3 (request, input step, answer step)", res.MessagesPerRequest)
	}
	if res.EventsPerRequest <= res.MessagesPerRequest {
		t.Errorf("events per request = %v, not more than the %v messages that hold them", res.EventsPerRequest, res.MessagesPerRequest)
	}
}
