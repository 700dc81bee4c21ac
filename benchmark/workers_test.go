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
	if res.RequestsPerS <= 0 || res.RawBoundRequestsPerS <= 0 || res.MessagesPerRequest < 2 {
		t.Fatalf("figures missing: %+v", res)
	}
}
