package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"strconv"
	"text/tabwriter"

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
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure turnlog against raw JetStream on an embedded server in a temp dir",
		Long: `bench starts an embedded NATS server in a temporary directory and measures,
side by side in one run: raw JetStream sync publish of same-sized messages,
turnlog Append (one event per call, with the concurrency check), Append in
batches of 4 events, fold throughput, Load latency for conversations of
1,000 and 100,000 events (with snapshots), and the bytes stored for a
200-exchange conversation as events versus a whole-Turn snapshot per
exchange. Compare ratios, not absolute figures: they vary with the machine.

--json prints one object with the keys raw_publish_per_s, append_per_s,
append_batch4_events_per_s, fold_events_per_s, load_ms_1k, load_ms_100k,
bytes_events_200, bytes_snapshots_200 (plus load_ms_100k_uncompacted,
event_bytes, and append_to_raw: the median over interleaved blocks of 100 of
append rate / raw rate, the figure least moved by other load).
long_conversation_events says how long the "100k" conversation was: 100,000,
or 10,000 with --quick, whose figures are labelled with that size.`,
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
			if quick {
				cfg.Publishes, cfg.Fold, cfg.LongConversation = 2000, 100_000, 10_000
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
	cmd.Flags().IntVar(&workers, "workers", 0, "measure requests end to end with N workers (100 conversations, scripted engine) instead")
	cmd.Flags().StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the run (server, workers and client: all in this process) to `file`, for go tool pprof")
	cmd.Flags().BoolVar(&quick, "quick", false, "a smaller run (10,000-event long conversation) for a fast check")
	return cmd
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
	fmt.Fprintf(w, "fold (projector.Apply)\t%.0f events/s\t\n", res.FoldEventsPerS)
	fmt.Fprintf(w, "Load, 1,000 events\t%.2f ms\t\n", res.LoadMs1k)
	long := thousands(res.LongConversationEvents)
	fmt.Fprintf(w, "Load, %s events (compacted)\t%.2f ms\t%.2f x 1k\n", long, res.LoadMs100k, res.LoadMs100k/res.LoadMs1k)
	fmt.Fprintf(w, "Load, %s events (never compacted)\t%.2f ms\t%.2f x 1k\n", long, res.LoadMs100kUncompacted, res.LoadMs100kUncompacted/res.LoadMs1k)
	fmt.Fprintf(w, "bytes, 200 exchanges as events\t%d\t\n", res.BytesEvents200)
	fmt.Fprintf(w, "bytes, 200 exchanges as Turn snapshots\t%d\t%.1f x events\n", res.BytesSnapshots200, float64(res.BytesSnapshots200)/float64(res.BytesEvents200))
	return w.Flush()
}
