package cli

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/profile"
	"github.com/turnlog/turnlog/replay"
	"github.com/turnlog/turnlog/worker"
)

func init() { commands = append(commands, newStatusCmd) }

func newStatusCmd() *cobra.Command {
	var (
		nf     natsFlags
		asJSON bool
		dead   bool
		scan   bool
		limit  int
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show streams, buckets, pending requests, dead letters, running workers and gateways, and (--scan) messages not turnlog's",
		Long: `Show the streams, the buckets beside them (snapshots, templates, request
IDs, history caches, the recording gateway's threading index: what each
holds, "not created" for one nothing has needed yet, "not visible" for
one the credential may not read: the threading index, to the client key,
as its keys name every gateway conversation), the pending
requests, the dead letters, the workers
that answer its ping (the first within 2s, pinged again meanwhile; the
others until 500ms pass without one), the recording gateways (serve's
and each turnlog gateway: they say they run every 30s; one not heard
from in 90s is listed as not seen since, for a day, as one killed or cut
off from NATS), and JetStream's storage: when a worker of
turnlog serve answers, what the server stores, its limit (--max-store),
what it may still take and the disk's free space; else what the streams
hold.

A dead letter is a chat request that could not end as request.completed or
request.failed in a conversation: its subject names no valid conversation
(e.g. a publish on the literal turnlog.chat.* or turnlog.chat.>), or its
last delivery could not write to its conversation. --dead lists the newest
ones with their subject, reason and time (the stream TURNLOG_DEAD_LETTERS
keeps them 30 days, at most 100,000 records or 256 MiB, oldest dropped
first).

A message on a conversation's subject that is not one of its steps is
foreign (turnlog did not write it: another NATS client's publish, a NATS
reply; every read ignores it) or quarantined (turnlog's headers, but not a
step of the conversation: its requests fail until turnlog repair removes
it). JetStream keeps no count of them, and status does not read every
message by default, so that it stays fast on a large log: --scan reads
every stored message (no fold: one read of the event streams) and lists the
conversations that hold such messages, with the command that shows them.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dead && limit < 1 {
				return fmt.Errorf("--limit %d: list at least 1 dead letter", limit)
			}
			ctx := cmd.Context()
			nc, l, err := nf.connect(ctx, eventlog.ReadOnly())
			if err != nil {
				return err
			}
			defer nc.Close()
			js, names := l.JetStream(), l.Names()
			st := struct {
				Streams []streamStatus `json:"streams"`
				// Buckets are the key-value and object stores beside the
				// streams (see bucketStatuses).
				Buckets     []bucketStatus  `json:"buckets"`
				Pending     uint64          `json:"pending_requests"`
				InProgress  int             `json:"requests_in_progress"`
				Partitions  int             `json:"partitions"`
				DeadLetters uint64          `json:"dead_letters"`
				Workers     []worker.Status `json:"workers"`
				// Gateways are the recording gateways that said they run
				// lately, and those that stopped without saying so (see
				// gatewayRows); null when the credential may not read them.
				Gateways []gatewayRow `json:"gateways"`
				// Profiles say who answers for each profile the workers
				// run: provider, model, endpoint.
				Profiles []profile.Summary `json:"profiles"`
				// Storage is JetStream's storage (see storageStatus).
				Storage storageStatus `json:"storage"`
				// Dead lists the newest dead letters (with --dead).
				Dead []eventlog.DeadLetter `json:"dead,omitempty"`
				// NotSteps counts the messages that are not steps (with
				// --scan; see notStepsStatus).
				NotSteps notStepsStatus `json:"not_steps"`
			}{Partitions: l.Partitions(), Workers: []worker.Status{}, Profiles: []profile.Summary{}}
			if st.DeadLetters, err = l.DeadLetterCount(ctx); err != nil {
				return err
			}
			if dead {
				if st.Dead, err = l.DeadLetters(ctx, limit); err != nil {
					return err
				}
			}
			for _, name := range append(names.EventStreams(), names.RequestsStream, names.DeadLettersStream) {
				s, err := js.Stream(ctx, name)
				if err != nil {
					return fmt.Errorf("stream %s: %w", name, err)
				}
				info := s.CachedInfo()
				ss := streamStatus{Name: name, Messages: info.State.Msgs, Bytes: info.State.Bytes, Subjects: info.State.NumSubjects, Replicas: info.Config.Replicas}
				if info.Cluster != nil {
					ss.Leader = info.Cluster.Leader
				}
				st.Streams = append(st.Streams, ss)
				if name == names.RequestsStream {
					st.Pending = info.State.Msgs
				}
			}
			if st.Buckets, err = bucketStatuses(ctx, js, names); err != nil {
				return err
			}
			for p := 0; p < l.Partitions(); p++ {
				c, err := js.Consumer(ctx, names.RequestsStream, worker.ConsumerName(names, p))
				if err != nil {
					continue // no worker has started on this installation yet
				}
				st.InProgress += c.CachedInfo().NumAckPending
			}
			if st.Workers, err = worker.Statuses(ctx, nc, names, 500*time.Millisecond); err != nil {
				return err
			}
			st.Profiles = workersProfiles(st.Workers)
			var gatewaysNote string
			st.Gateways, gatewaysNote = gatewayRows(ctx, l, st.Buckets)
			var streamBytes int64
			for _, s := range st.Streams {
				streamBytes += int64(s.Bytes)
			}
			for _, b := range st.Buckets {
				streamBytes += int64(b.Bytes)
			}
			st.Storage = readStorage(st.Workers, streamBytes)
			if scan {
				if st.NotSteps.NotStepsScan, err = replay.ScanNotSteps(ctx, l); err != nil {
					return fmt.Errorf("scan the event streams: %w", err)
				}
				st.NotSteps.Scanned = true
			}
			out := cmd.OutOrStdout()
			if asJSON {
				return printJSON(out, st)
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "STREAM\tMESSAGES\tBYTES\tSUBJECTS\tREPLICAS")
			for _, s := range st.Streams {
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%d\n", s.Name, s.Messages, s.Bytes, s.Subjects, s.Replicas)
			}
			printBuckets(w, st.Buckets)
			fmt.Fprintf(w, "\nstorage: %s\n", st.Storage)
			fmt.Fprintf(w, "requests pending: %d (in progress: %d, partitions: %d)\n", st.Pending, st.InProgress, st.Partitions)
			fmt.Fprintf(w, "dead letters: %d", st.DeadLetters)
			if st.DeadLetters > 0 && !dead {
				fmt.Fprint(w, " (turnlog status --dead lists them)")
			}
			fmt.Fprint(w, "\n")
			printNotSteps(w, st.NotSteps)
			if dead && len(st.Dead) > 0 {
				fmt.Fprintln(w, "DEAD LETTER\tTIME\tSUBJECT\tREASON\tDATA")
				for _, d := range st.Dead {
					fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\n", d.Seq, d.Time.Format(time.RFC3339), printable(d.Subject, 80), printable(d.Reason, 200), printable(string(d.Data), 60))
				}
				fmt.Fprintln(w)
			}
			fmt.Fprintln(w, "WORKER\tSTARTED\tHANDLED\tPROFILES")
			for _, ws := range st.Workers {
				fmt.Fprintf(w, "%s\t%s\t%d\t%v\n", ws.Name, ws.Started.Format(time.RFC3339), ws.Handled, ws.Profiles)
			}
			if len(st.Workers) == 0 {
				fmt.Fprintf(w, "(no worker answered within %s)\n", worker.FirstStatusWait)
			}
			printGateways(w, st.Gateways, gatewaysNote)
			if len(st.Profiles) > 0 {
				fmt.Fprintln(w, "\nPROFILE\tPROVIDER\tMODEL\tBASE URL")
				for _, p := range st.Profiles {
					fmt.Fprintf(w, "%s\t%s\t%s\t%s\n", p.Name, p.Provider, orDash(p.Model), orDash(p.BaseURL))
				}
			}
			return w.Flush()
		},
	}
	nf.register(cmd.Flags())
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	cmd.Flags().BoolVar(&dead, "dead", false, "list the newest dead letters: subject, reason and time")
	cmd.Flags().IntVar(&limit, "limit", 50, "how many dead letters --dead lists")
	cmd.Flags().BoolVar(&scan, "scan", false, "read every stored message to count those on conversations' subjects that are not steps (foreign, quarantined) and list the conversations that hold them: one read of the event streams")
	return cmd
}

// printable quotes text another NATS client wrote (a dead letter's
// subject, reason or body), so control characters cannot drive the
// terminal, shortened to n bytes.
func printable(s string, n int) string {
	if len(s) > n {
		s = s[:n] + "..."
	}
	return strconv.Quote(s)
}

// workersProfiles is every profile the workers said they run, once each:
// workers with the same profiles file say the same; workers that differ
// (a profile on another model) show each version.
func workersProfiles(workers []worker.Status) []profile.Summary {
	out := []profile.Summary{}
	for _, ws := range workers {
		for _, s := range ws.Summaries {
			if !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	slices.SortFunc(out, func(a, b profile.Summary) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Provider, b.Provider),
			strings.Compare(a.Model, b.Model), strings.Compare(a.BaseURL, b.BaseURL))
	})
	return out
}

// orDash is s, or "-" for nothing, so that a table's columns stay aligned.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
