package cli

import (
	"cmp"
	"context"
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
conversations that hold such messages, with the command that shows them.

On a cluster, each stream's and bucket's REPLICAS says who leads it, how
many replicas are current, and names those offline or lagging:
"3 (leader n2, 2 current, offline: n1)" ("leader", "replicas_current",
"replicas_offline", "replicas_lagging" in --json).

A stream or bucket that does not answer within 4s (no leader: the servers
that hold it are down, or electing one) is listed as unavailable, with the
reason, and the rest as usual ("unavailable" in --json, on the row and in
a list of all). Exit status: 0 when every stream and bucket was read, 1
when some were unavailable (what could be read is printed all the same),
2 when status could not run (no NATS server, a credential refused).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if dead && limit < 1 {
				return fmt.Errorf("--limit %d: list at least 1 dead letter", limit)
			}
			ctx := cmd.Context()
			// Attached, not opened: Open looks every stream and bucket up
			// and fails on the first without a leader, where status
			// should show the others and say which (see statusreach.go).
			nc, err := nf.dialFor(ctx)
			if err != nil {
				return err
			}
			defer nc.Close()
			l, err := eventlog.Attach(nc, eventlog.WithPrefix(nf.prefix), eventlog.ReadOnly())
			if err != nil {
				return err
			}
			js := l.JetStream()
			shardsCtx, cancel := context.WithTimeout(ctx, lookupWait)
			shards, shardsErr := l.EventShards(shardsCtx)
			cancel()
			names := l.Names().WithEventShards(max(shards, 1))
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
				// Unavailable names the streams and buckets that could not
				// be read, with why (status then exits 1).
				Unavailable []string `json:"unavailable,omitempty"`
			}{Workers: []worker.Status{}, Profiles: []profile.Summary{}}
			streams := append(names.EventStreams(), names.RequestsStream, names.DeadLettersStream)
			lookups := slices.Clone(streams)
			if shardsErr != nil {
				lookups = lookups[1:] // the first events stream did not answer already
			}
			for _, b := range bucketStreams(names) {
				lookups = append(lookups, b.stream)
			}
			found := lookUpStreams(ctx, js, lookups)
			if shardsErr != nil {
				found[streams[0]] = lookedUp{err: shardsErr}
			}
			for _, name := range streams {
				ss := streamStatus{Name: name}
				r := found[name]
				if r.err != nil {
					ss.Unavailable = unavailableReason(r.err)
					st.Unavailable = append(st.Unavailable, name+": "+ss.Unavailable)
					st.Streams = append(st.Streams, ss)
					continue
				}
				info := r.info
				ss.Messages, ss.Bytes, ss.Subjects, ss.Replicas = info.State.Msgs, info.State.Bytes, info.State.NumSubjects, info.Config.Replicas
				ss.replicaHealth = replicaHealthOf(info)
				st.Streams = append(st.Streams, ss)
				switch name {
				case names.RequestsStream:
					st.Pending = info.State.Msgs
					st.Partitions = eventlog.PartitionsOf(info.Config)
				case names.DeadLettersStream:
					st.DeadLetters = info.State.Msgs
				}
			}
			st.Buckets = bucketStatuses(names, found)
			for _, b := range st.Buckets {
				if b.Unavailable != "" {
					st.Unavailable = append(st.Unavailable, b.Name+": "+b.Unavailable)
				}
			}
			if dead && found[names.DeadLettersStream].err == nil {
				if st.Dead, err = l.DeadLetters(ctx, limit); err != nil {
					return err
				}
			}
			// One wait for every partition's consumer: each answers at
			// once when it has a leader.
			consumersCtx, cancel := context.WithTimeout(ctx, lookupWait)
			for p := 0; p < st.Partitions; p++ {
				c, err := js.Consumer(consumersCtx, names.RequestsStream, worker.ConsumerName(names, p))
				if err != nil {
					continue // no worker has started on this installation yet
				}
				st.InProgress += c.CachedInfo().NumAckPending
			}
			cancel()
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
			if scan && len(st.Unavailable) == 0 {
				if st.NotSteps.NotStepsScan, err = replay.ScanNotSteps(ctx, l); err != nil {
					return fmt.Errorf("scan the event streams: %w", err)
				}
				st.NotSteps.Scanned = true
			}
			out := cmd.OutOrStdout()
			if asJSON {
				if err := printJSON(out, st); err != nil {
					return err
				}
				return unavailableError(st.Unavailable)
			}
			w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "STREAM\tMESSAGES\tBYTES\tSUBJECTS\tREPLICAS")
			for _, s := range st.Streams {
				if s.Unavailable != "" {
					fmt.Fprintf(w, "%s\t-\t-\t-\t-\tunavailable: %s\n", s.Name, s.Unavailable)
					continue
				}
				fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\n", s.Name, s.Messages, s.Bytes, s.Subjects, replicasCell(s.Replicas, s.replicaHealth))
			}
			printBuckets(w, st.Buckets)
			fmt.Fprintf(w, "\nstorage: %s\n", st.Storage)
			if found[names.RequestsStream].err != nil {
				fmt.Fprintf(w, "requests pending: unknown (%s unavailable)\n", names.RequestsStream)
			} else {
				fmt.Fprintf(w, "requests pending: %d (in progress: %d, partitions: %d)\n", st.Pending, st.InProgress, st.Partitions)
			}
			if found[names.DeadLettersStream].err != nil {
				fmt.Fprintf(w, "dead letters: unknown (%s unavailable)", names.DeadLettersStream)
			} else {
				fmt.Fprintf(w, "dead letters: %d", st.DeadLetters)
			}
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
			if err := w.Flush(); err != nil {
				return err
			}
			return unavailableError(st.Unavailable)
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
