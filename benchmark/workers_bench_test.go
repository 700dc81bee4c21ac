package benchmark

import (
	"bufio"
	"context"
	"flag"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"testing"
)

// roundsProfile is where BenchmarkWorkersThroughput writes a CPU profile
// of its timed rounds alone: -test.cpuprofile also holds the set-up and
// the workers' shutdown (which snapshots every Turn they hold).
var roundsProfile = flag.String("rounds.cpuprofile", "", "write a CPU profile of BenchmarkWorkersThroughput's timed rounds (or BenchmarkWorkersRawBound's publishes) to `file`")

func startCPUProfile(b *testing.B, file string) (stop func()) {
	b.Helper()
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// roundsMemProfile is where BenchmarkWorkersThroughput writes the
// allocation profile after its rounds, and beside it (.base) the one
// before them: go tool pprof -base file.base file shows the rounds'.
var roundsMemProfile = flag.String("rounds.memprofile", "", "write allocation profiles before (`file`.base) and after BenchmarkWorkersThroughput's timed rounds")

func writeHeapProfile(b *testing.B, file string) {
	b.Helper()
	runtime.GC() // the profile holds the allocations up to the last GC
	f, err := os.Create(file)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWorkersThroughput runs the throughput part of `turnlog bench
// --workers 2` alone (no latency part, no raw bound), so that a CPU, block
// or mutex profile of it shows the workers' work and the server's:
//
//	go test -run '^$' -bench WorkersThroughput -benchtime 10x \
//	    -blockprofile block.out ./benchmark/ -args -rounds.cpuprofile cpu.out
//
// One iteration is one round: 100 conversations x 10 requests sent at
// once, timed until the last one completed. Besides requests/s it reports
// the CPU the whole process (server, workers, senders) spent per request,
// which a shared machine moves far less than the wall time, and, per
// request, the workers' loads from the log, catch-ups and conflicts (a
// request served from the cache needs none), the snapshots they saved,
// and the messages their connections sent and received: two appends, an
// ack and the deltas out, a delivery and two append replies in, plus a
// direct get of the last message, one of the global template and one of
// the erasure note (is a conversation the log holds nothing of erased
// since the request was sent?) for a conversation's first request, and a
// pull now and then.
func BenchmarkWorkersThroughput(b *testing.B) {
	ctx := context.Background()
	rig, err := startWorkers(ctx, 2)
	if err != nil {
		b.Fatal(err)
	}
	defer rig.stop()
	cfg := WorkersConfig{Workers: 2, Conversations: 100, PerConv: 10}
	// A warm-up round: the consumers exist and the workers pull.
	if _, err := throughput(ctx, rig, cfg, -1, false); err != nil {
		b.Fatal(err)
	}
	before := workerCounters(b, rig)
	if *roundsMemProfile != "" {
		writeHeapProfile(b, *roundsMemProfile+".base")
	}
	var stopProfile func()
	if *roundsProfile != "" {
		stopProfile = startCPUProfile(b, *roundsProfile)
	}
	b.ResetTimer()
	cpu := cpuTime()
	var sum float64
	for i := 0; i < b.N; i++ {
		res, err := throughput(ctx, rig, cfg, i, false)
		if err != nil {
			b.Fatal(err)
		}
		sum += res.requestsPerS
	}
	b.StopTimer() // not the workers' shutdown
	if stopProfile != nil {
		stopProfile()
	}
	if *roundsMemProfile != "" {
		writeHeapProfile(b, *roundsMemProfile)
	}
	requests := float64(b.N * cfg.Conversations * cfg.PerConv)
	b.ReportMetric(sum/float64(b.N), "requests/s")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/requests, "cpu-µs/request")
	// How much of the processors the rounds kept busy: what is left
	// idle is time the requests spent waiting on one another.
	b.ReportMetric((cpuTime()-cpu).Seconds()/b.Elapsed().Seconds()/float64(runtime.GOMAXPROCS(0)), "cpu-busy")
	after := workerCounters(b, rig)
	snapshots := 0.0
	for series, v := range after {
		if strings.HasPrefix(series, "turnlog_snapshots_saved_total{") && !strings.Contains(series, `"failed"`) && !strings.Contains(series, `"skipped"`) {
			snapshots += v - before[series]
		}
	}
	b.ReportMetric(snapshots/requests, "snapshots/request")
	for _, c := range []struct{ series, unit string }{
		{`turnlog_turn_loads_total{source="log"}`, "log-loads/request"},
		{`turnlog_turn_loads_total{source="cache_and_tail"}`, "catch-ups/request"},
		{`turnlog_conflicts_total`, "conflicts/request"},
		{"nats_out_msgs", "worker-msgs-out/request"},
		{"nats_in_msgs", "worker-msgs-in/request"},
	} {
		b.ReportMetric((after[c.series]-before[c.series])/requests, c.unit)
	}
}

// workerCounters sums the workers' Prometheus series by name and labels,
// and the messages their connections sent and received (nats_out_msgs,
// nats_in_msgs).
func workerCounters(b *testing.B, rig *workerRig) map[string]float64 {
	b.Helper()
	sums := map[string]float64{}
	for _, c := range rig.conns {
		st := c.Stats()
		sums["nats_out_msgs"] += float64(st.OutMsgs)
		sums["nats_in_msgs"] += float64(st.InMsgs)
	}
	for _, w := range rig.workers {
		rec := httptest.NewRecorder()
		w.Metrics().Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		sc := bufio.NewScanner(rec.Body)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			i := strings.LastIndexByte(line, ' ')
			if i < 0 {
				continue
			}
			v, err := strconv.ParseFloat(line[i+1:], 64)
			if err != nil {
				continue
			}
			sums[line[:i]] += v
		}
	}
	return sums
}

// BenchmarkWorkersRawBound runs the bound of `turnlog bench --workers 2`
// alone: 2 publishers x 4,000 raw sync publishes of 300 bytes, with the
// workers idle beside them, as in the bench.
func BenchmarkWorkersRawBound(b *testing.B) {
	ctx := context.Background()
	rig, err := startWorkers(ctx, 2)
	if err != nil {
		b.Fatal(err)
	}
	defer rig.stop()
	l := rig.log
	if *roundsProfile != "" {
		stop := startCPUProfile(b, *roundsProfile)
		defer stop()
	}
	b.ResetTimer()
	cpu := cpuTime()
	var sum float64
	for i := 0; i < b.N; i++ {
		perS, _, err := rawPublishes(ctx, l, 2, 4000)
		if err != nil {
			b.Fatal(err)
		}
		sum += perS
	}
	b.StopTimer()
	b.ReportMetric(sum/float64(b.N), "publishes/s")
	b.ReportMetric(float64((cpuTime()-cpu).Microseconds())/float64(b.N*2*4000), "cpu-µs/publish")
}
