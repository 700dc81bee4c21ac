package cli

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/benchmark"
)

func init() { commands = append(commands, newBenchCmd) }

func newBenchCmd() *cobra.Command {
	var (
		asJSON     bool
		quick      bool
		workers    int
		cpuProfile string
		gw         bool
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure turnlog against raw JetStream on an embedded server in a temp dir",
		Long: `bench starts an embedded NATS server in a temporary directory and measures,
side by side in one run: raw JetStream sync publish of same-sized messages,
turnlog Append (one event per call, with the concurrency check), Append in
batches of 4 events, fold throughput (stored messages decoded and applied,
and applied only), Load latency for conversations of 1,000 and 100,000
events (with snapshots), loads and history reads of 100-event conversations
in a stream of 1,000,000 messages over 10,000 conversations, the bytes
stored for a 200-exchange conversation as events (and on disk, with and
without S2 compression) versus a whole-Turn snapshot per exchange, and the
peak memory of a worker process after 10,000 requests over 1,000
conversations. Compare ratios, not absolute figures: they vary with the
machine.

The big stream takes minutes to build; it is kept in the temporary directory
(turnlog-bench-stream-*) and reused by later runs. --quick measures smaller
sizes (100,000 messages over 1,000 conversations; 1,000 requests over 100
conversations; a 10,000-event long conversation) and labels them.

--json prints one object with the keys raw_publish_per_s, append_per_s,
append_batch4_events_per_s, fold_events_per_s (decode and apply),
apply_events_per_s, load_ms_1k, load_ms_100k, load_ms_100k_uncompacted,
load_ms_1m_active, load_ms_1m_idle, load_ms_1m_cold (and _first: the first
cold load, which reads the stream and writes the history cache the others
read), history_ms_1m_warm, history_ms_1m_cold (and _uncached), bytes_events_200, bytes_events_200_disk (S2),
bytes_events_200_disk_uncompressed, bytes_snapshots_200, worker_peak_rss_mb,
event_bytes and append_to_raw (the median over interleaved blocks of 100 of
append rate / raw rate, the figure least moved by other load). The sizes
measured: long_conversation_events (the "100k" conversation),
stream_1m_messages and stream_1m_conversations (the "1m" stream),
worker_memory_requests and worker_memory_conversations.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			out := cmd.OutOrStdout()
			if cpuProfile != "" {
				f, err := os.Create(cpuProfile)
				if err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				defer f.Close()
				if err := pprof.StartCPUProfile(f); err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				defer pprof.StopCPUProfile()
			}
			if gw {
				cfg := benchmark.GatewayConfig{Progress: os.Stderr}
				if quick {
					cfg.Calls, cfg.Saturation = 400, time.Second
				}
				res, err := benchmark.RunGateway(cmd.Context(), cfg)
				if err != nil {
					return fmt.Errorf("bench --gateway: %w", err)
				}
				if asJSON {
					return printJSON(out, res)
				}
				return writeGatewayBench(out, res)
			}
			if workers > 0 {
				res, err := benchmark.RunWorkers(cmd.Context(), benchmark.WorkersConfig{Workers: workers, Progress: os.Stderr})
				if err != nil {
					return fmt.Errorf("bench: %w", err)
				}
				if asJSON {
					return printJSON(out, res)
				}
				w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
				fmt.Fprintf(w, "requests, %d conversations x %d, %d workers\t%.0f requests/s\t\n", res.Conversations, res.Requests/res.Conversations, res.Workers, res.RequestsPerS)
				fmt.Fprintf(w, "raw JetStream bound (%.1f events/request, one message each)\t%.0f requests/s\t%.2f of the bound\n", res.EventsPerRequest, res.RawBoundRequestsPerS, res.RatioToBound)
				fmt.Fprintf(w, "raw JetStream bound (%.1f messages/request, as turnlog stores them)\t%.0f requests/s\t%.2f of the bound\n", res.MessagesPerRequest, res.RawMessageBoundRequestsPerS, res.RatioToMessageBound)
				fmt.Fprintf(w, "latency, idle, send to completed\tp50 %.2f ms\tp99 %.2f ms\n", res.LatencyP50Ms, res.LatencyP99Ms)
				fmt.Fprintf(w, "added over raw publishes\tp50 %.2f ms\tp99 %.2f ms\n", res.AddedP50Ms, res.AddedP99Ms)
				return w.Flush()
			}
			cfg := benchmark.Config{Progress: os.Stderr}
			if exe, err := os.Executable(); err == nil {
				cfg.WorkerCommand = []string{exe, "worker"}
			}
			if quick {
				cfg.Publishes, cfg.Fold, cfg.LongConversation = 2000, 100_000, 10_000
				cfg.BigMessages, cfg.BigConversations = 100_000, 1_000
				cfg.MemoryRequests, cfg.MemoryConversations = 1_000, 100
			}
			res, err := benchmark.Run(cmd.Context(), cfg)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			if asJSON {
				return printJSON(out, res)
			}
			return writeBenchText(out, res)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the figures as one JSON object")
	cmd.Flags().BoolVar(&gw, "gateway", false, "measure the recording gateway instead: added latency and calls/s against calling a stand-in upstream directly and through a reverse proxy that records nothing, and the log bytes of a 200-call conversation (see docs/gateway.md)")
	cmd.Flags().IntVar(&workers, "workers", 0, "measure requests end to end with N workers (100 conversations, scripted engine) instead")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run (server, workers and client: all in this process) to `file`, for go tool pprof")
	cmd.Flags().BoolVar(&quick, "quick", false, "a smaller run (10,000-event long conversation, 100,000-message stream, 1,000 requests for the memory figure) for a fast check; the sizes are in the output")
	return cmd
}

// writeGatewayBench prints bench --gateway's figures.
func writeGatewayBench(out io.Writer, r benchmark.GatewayResults) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "%d calls each, %d at once, upstream answering after %.0f ms (direct p50 %.2f ms, p99 %.2f ms)\t\t\n", r.Calls, r.Concurrency, r.UpstreamDelayMs, r.DirectP50Ms, r.DirectP99Ms)
	fmt.Fprintf(w, "added latency, reverse proxy (records nothing)\tp50 %.2f ms\tp99 %.2f ms\t\n", r.PassthroughOverheadP50Ms, r.PassthroughOverheadP99Ms)
	fmt.Fprintf(w, "added latency, gateway\tp50 %.2f ms\tp99 %.2f ms\t\n", r.GatewayOverheadP50Ms, r.GatewayOverheadP99Ms)
	fmt.Fprintf(w, "added time to first byte, streamed\tproxy %.2f ms\tgateway %.2f ms\t\n", r.PassthroughTTFBMs, r.GatewayTTFBOverheadMs)
	fmt.Fprintf(w, "calls/s at saturation (%d clients)\tdirect %.0f\tproxy %.0f\tgateway %.0f\n", r.SaturationClients, r.DirectCallsPerS, r.PassthroughCallsPerS, r.GatewayCallsPerS)
	fmt.Fprintf(w, "200-call conversation\trequest bodies %d B\tlog %d B (%.3f)\t\n", r.GatewayRequestBytes200, r.GatewayLogBytes200, r.LogToRequestFraction)
	return w.Flush()
}

// thousands writes n with commas: 100000 -> "100,000".
func thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// writeBenchText prints a run's figures as a table, each labelled with the
// size it measured.
func writeBenchText(out io.Writer, res benchmark.Results) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "raw JetStream sync publish (%d B)\t%.0f msgs/s\t\n", res.EventBytes, res.RawPublishPerS)
	fmt.Fprintf(w, "turnlog Append, 1 event/step\t%.0f events/s\t%.2f x raw (block by block: %.2f)\n", res.AppendPerS, res.AppendPerS/res.RawPublishPerS, res.AppendToRaw)
	fmt.Fprintf(w, "turnlog Append, 4 events/step\t%.0f events/s\t%.2f x raw\n", res.AppendBatch4EventsPerS, res.AppendBatch4EventsPerS/res.RawPublishPerS)
	fmt.Fprintf(w, "fold (decode the stored messages and apply)\t%.0f events/s\t\n", res.FoldEventsPerS)
	fmt.Fprintf(w, "apply only (projector.Apply)\t%.0f events/s\t\n", res.ApplyEventsPerS)
	fmt.Fprintf(w, "Load, 1,000 events\t%.2f ms\t\n", res.LoadMs1k)
	long := thousands(res.LongConversationEvents)
	fmt.Fprintf(w, "Load, %s events (compacted)\t%.2f ms\t%.2f x 1k\n", long, res.LoadMs100k, res.LoadMs100k/res.LoadMs1k)
	fmt.Fprintf(w, "Load, %s events (never compacted)\t%.2f ms\t%.2f x 1k\n", long, res.LoadMs100kUncompacted, res.LoadMs100kUncompacted/res.LoadMs1k)
	big := fmt.Sprintf("%s messages over %s conversations", thousands(res.BigStreamMessages), thousands(res.BigStreamConversations))
	fmt.Fprintf(w, "Load, 100 events, %s, snapshot, written last\t%.2f ms\t%.2f x 1k\n", big, res.LoadMs1mActive, res.LoadMs1mActive/res.LoadMs1k)
	fmt.Fprintf(w, "Load, same, idle since the first tenth\t%.2f ms\t%.2f x 1k\n", res.LoadMs1mIdle, res.LoadMs1mIdle/res.LoadMs1k)
	fmt.Fprintf(w, "Load, same, no snapshot, spread over the stream\t%.2f ms\t%.2f x 1k (the first, without a history cache: %.2f ms)\n", res.LoadMs1mCold, res.LoadMs1mCold/res.LoadMs1k, res.LoadMs1mColdFirst)
	fmt.Fprintf(w, "history (all 100 events, no snapshot)\t%.2f ms\t\n", res.HistoryMs1mWarm)
	fmt.Fprintf(w, "history, first read after a server restart\t%.2f ms\t(without a history cache: %.2f ms)\n", res.HistoryMs1mCold, res.HistoryMs1mColdUncached)
	fmt.Fprintf(w, "bytes, 200 exchanges as events\t%d\t\n", res.BytesEvents200)
	fmt.Fprintf(w, "bytes on disk, same, S2 compression\t%d\t(%d uncompressed)\n", res.BytesEvents200Disk, res.BytesEvents200DiskUncompressed)
	fmt.Fprintf(w, "bytes, 200 exchanges as Turn snapshots\t%d\t%.1f x events, %.1f x events on disk with S2\n", res.BytesSnapshots200,
		float64(res.BytesSnapshots200)/float64(res.BytesEvents200), float64(res.BytesSnapshots200)/float64(max(res.BytesEvents200Disk, 1)))
	if res.WorkerMemoryRequests > 0 {
		fmt.Fprintf(w, "worker process peak memory, %s requests over %s conversations\t%.1f MB\t\n",
			thousands(res.WorkerMemoryRequests), thousands(res.WorkerMemoryConversations), res.WorkerPeakRSSMB)
	}
	return w.Flush()
}
