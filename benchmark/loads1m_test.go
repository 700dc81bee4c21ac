package benchmark

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// BenchmarkBigLoads runs the big-stream step of `turnlog bench` (loads
// and history reads in a stream of many conversations) and reports its
// figures. The stream has 100,000 messages over 1,000 conversations unless
// TURNLOG_BENCH_BIG_MESSAGES says otherwise (1000000 for the full size;
// conversations are a hundredth of the messages); it is built once and
// kept in the temporary directory.
func BenchmarkBigLoads(b *testing.B) {
	messages := 100_000
	if v := os.Getenv("TURNLOG_BENCH_BIG_MESSAGES"); v != "" {
		var err error
		if messages, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	r := &runner{cfg: Config{BigMessages: messages, BigConversations: messages / 100}}
	if testing.Verbose() {
		r.cfg.Progress = os.Stderr
	}
	for b.Loop() {
		if err := r.bigLoads(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(r.res.LoadMs1mActive, "active-ms")
	b.ReportMetric(r.res.LoadMs1mIdle, "idle-ms")
	b.ReportMetric(r.res.LoadMs1mCold, "cold-ms")
	b.ReportMetric(r.res.HistoryMs1mWarm, "history-warm-ms")
	b.ReportMetric(r.res.HistoryMs1mCold, "history-cold-ms")
	b.ReportMetric(r.res.LoadMs1mColdFirst, "cold-first-ms")
	b.ReportMetric(r.res.HistoryMs1mColdUncached, "history-cold-uncached-ms")
}
