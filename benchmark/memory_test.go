package benchmark

import (
	"context"
	"os"
	"testing"
)

// BenchmarkWorkerMemory reports the peak memory of the turnlog worker
// process named by TURNLOG_BENCH_WORKER (a turnlog binary; skipped
// without) after 10,000 requests over 1,000 conversations: the
// worker_peak_rss_mb figure of `turnlog bench`, for any build of the
// worker.
func BenchmarkWorkerMemory(b *testing.B) {
	exe := os.Getenv("TURNLOG_BENCH_WORKER")
	if exe == "" {
		b.Skip("TURNLOG_BENCH_WORKER names no turnlog binary")
	}
	var res Results
	for b.Loop() {
		var err error
		if res, err = RunWorkerMemory(context.Background(), Config{WorkerCommand: []string{exe, "worker"}, Progress: os.Stderr}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(res.WorkerPeakRSSMB, "peak-MB")
}
