// Package benchmark measures turnlog against its baselines in one run on an
// embedded server in a temp dir, so that ratios compare figures taken on the
// same machine at the same moment: `turnlog bench` prints them and
// BENCHMARKS.md records them.
package benchmark

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
	"github.com/vmihailenco/msgpack/v5"
)

// Results are the figures of one run. The JSON keys are a stable interface
// for scripts.
type Results struct {
	RawPublishPerS         float64 `json:"raw_publish_per_s"`
	AppendPerS             float64 `json:"append_per_s"`
	AppendBatch4EventsPerS float64 `json:"append_batch4_events_per_s"`
	FoldEventsPerS         float64 `json:"fold_events_per_s"`
	LoadMs1k               float64 `json:"load_ms_1k"`
	LoadMs100k             float64 `json:"load_ms_100k"`
	LoadMs100kUncompacted  float64 `json:"load_ms_100k_uncompacted"`
	BytesEvents200         int64   `json:"bytes_events_200"`
	BytesSnapshots200      int64   `json:"bytes_snapshots_200"`
	EventBytes             int     `json:"event_bytes"`
	// LongConversationEvents is the size of the conversation the
	// load_ms_100k figures measured: 100,000 in a full run, fewer with
	// `bench --quick`, which keeps the keys but not their size.
	LongConversationEvents int `json:"long_conversation_events"`
	// AppendToRaw is the median, over the interleaved blocks, of append
	// rate / raw rate measured back to back: the ratio least moved by
	// other load on the machine.
	AppendToRaw float64 `json:"append_to_raw"`
}

// Config sizes a run; the zero value is the full run.
type Config struct {
	// Publishes is the number of sync publishes and appends per figure.
	Publishes int
	// Fold is the number of events folded.
	Fold int
	// LongConversation is the size of the long conversation (100,000).
	LongConversation int
	// Progress, when set, receives one line per phase.
	Progress io.Writer
}

func (c *Config) defaults() {
	if c.Publishes == 0 {
		c.Publishes = 20000
	}
	if c.Fold == 0 {
		c.Fold = 1_000_000
	}
	if c.LongConversation == 0 {
		c.LongConversation = 100_000
	}
}

// Run starts an embedded server in a temp dir, measures, and removes it.
func Run(ctx context.Context, cfg Config) (Results, error) {
	cfg.defaults()
	dir, err := os.MkdirTemp("", "turnlog-bench-")
	if err != nil {
		return Results{}, err
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{DataDir: dir})
	if err != nil {
		return Results{}, err
	}
	defer srv.Shutdown()
	nc, err := srv.Connect()
	if err != nil {
		return Results{}, err
	}
	defer nc.Close()
	r := &runner{cfg: cfg, nc: nc}
	return r.run(ctx)
}

type runner struct {
	cfg Config
	nc  *nats.Conn
	res Results
}

func (r *runner) say(format string, args ...any) {
	if r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, format+"\n", args...)
	}
}

func (r *runner) run(ctx context.Context) (Results, error) {
	l, err := eventlog.Open(ctx, r.nc)
	if err != nil {
		return r.res, err
	}
	steps := []func(context.Context, *eventlog.Log) error{r.publishes, r.fold, r.loads, r.bytes}
	for _, step := range steps {
		if err := step(ctx, l); err != nil {
			return r.res, err
		}
	}
	return r.res, nil
}

// text is a chat-sized message body.
func text(n int, seed int) string {
	s := fmt.Sprintf("message %d: ", seed)
	return s + strings.Repeat("lorem ipsum ", (n-len(s))/12+1)[:max(0, n-len(s))]
}

func userEvent(conv, cause string, step, i int) events.Event {
	return events.New(conv, cause, step, "bench", events.UserAppended{BlockID: newID(), Text: text(120, i)})
}

// block is how many publishes or appends one timed block holds. The
// figures alternate in blocks this small, so that a machine busy with
// something else slows both alike; each figure is the median of its blocks.
// (Rounds of thousands let a burst of load hit one side only: the ratio of
// the same binary then moved between 0.35 and 0.94 on a busy machine.)
const block = 100

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// publishes measures, in interleaved blocks: raw JetStream sync publish of
// messages the size of a one-event step to the same stream without
// headers (the bound turnlog is compared with); turnlog Append of one event
// per call, with the expected-sequence check and the step ID, including
// validating and encoding the event; and Append of four events per call.
// The events are built before their block is timed, as raw's bytes are:
// building a chat event is the caller's work, not the log's.
func (r *runner) publishes(ctx context.Context, l *eventlog.Log) error {
	sample, err := events.Encode(userEvent("raw", "sample", 0, 0))
	if err != nil {
		return err
	}
	r.res.EventBytes = len(sample)
	js := l.JetStream()
	subject := l.Names().EventsSubject("raw-publish")
	blocks := max(r.cfg.Publishes/block, 3)
	r.say("publish and append: %d interleaved blocks of %d raw publishes (%d bytes), %d one-event appends, %d four-event appends",
		blocks, block, len(sample), block, block/4)
	var raw, one, four, ratio []float64
	var seq1, seq4 uint64
	evs := make([]events.Event, block)
	for b := 0; b < blocks; b++ {
		start := time.Now()
		for i := 0; i < block; i++ {
			if _, err := js.Publish(ctx, subject, sample); err != nil {
				return fmt.Errorf("raw publish: %w", err)
			}
		}
		raw = append(raw, float64(block)/time.Since(start).Seconds())

		for i := range evs {
			step := b*block + i
			evs[i] = userEvent("bench-append", "a", step, step)
		}
		start = time.Now()
		for i := range evs {
			if seq1, err = l.Append(ctx, "bench-append", seq1, evs[i]); err != nil {
				return err
			}
		}
		one = append(one, float64(block)/time.Since(start).Seconds())
		ratio = append(ratio, one[len(one)-1]/raw[len(raw)-1])

		for i := range evs {
			step := b*block + i/4
			evs[i] = userEvent("bench-batch", "b", step, i)
		}
		start = time.Now()
		for i := 0; i < block; i += 4 {
			if seq4, err = l.Append(ctx, "bench-batch", seq4, evs[i:i+4]...); err != nil {
				return err
			}
		}
		four = append(four, float64(block)/time.Since(start).Seconds())
	}
	r.res.RawPublishPerS, r.res.AppendPerS, r.res.AppendBatch4EventsPerS = median(raw), median(one), median(four)
	r.res.AppendToRaw = median(ratio)
	return nil
}

// exchange returns the events of one chat exchange on turn: user message,
// model call, reasoning and answer, end of request. Every compactAt blocks
// (0: never) it compacts all but the last few into a summary, as the
// compaction middleware does.
func exchange(turn *projector.Turn, conv string, i int, compactAt int) [][]events.Event {
	cause := fmt.Sprintf("%s-r%d", conv, i)
	mk := func(step int, p events.Payload) events.Event { return events.New(conv, cause, step, "bench", p) }
	steps := [][]events.Event{
		{mk(0, events.UserAppended{BlockID: newID(), Text: text(200, i)})},
		{mk(1, events.InferenceStarted{InferenceID: newID(), Model: "m", InputHash: "h", Blocks: len(turn.Blocks)})},
		{mk(2, events.ReasoningAppended{BlockID: newID(), Text: text(150, i)}),
			mk(2, events.LLMTextAppended{BlockID: newID(), Text: text(600, i)}),
			mk(2, events.InferenceFinished{InferenceID: "i", PromptTokens: 100, CompletionTokens: 150}),
			mk(2, events.RequestCompleted{Inferences: 1})},
	}
	if compactAt > 0 && len(turn.Blocks)+3 > compactAt {
		keep := 20
		removed := make([]string, 0, len(turn.Blocks))
		for _, b := range turn.Blocks[:len(turn.Blocks)-keep] {
			removed = append(removed, b.ID)
		}
		steps[1] = append([]events.Event{mk(1, events.TurnCompacted{Removed: removed,
			Summary: &events.Block{ID: newID(), Kind: events.KindOther, Text: text(800, i)}})}, steps[1]...)
	}
	return steps
}

// fold: events folded per second into one Turn, from decoded events, as a
// loader does after reading them.
func (r *runner) fold(ctx context.Context, l *eventlog.Log) error {
	n := r.cfg.Fold
	r.say("fold: %d events", n)
	var evs []events.Event
	model := projector.New("fold")
	for i := 0; len(evs) < n; i++ {
		for _, step := range exchange(model, "fold", i, 400) {
			if err := projector.ApplyAll(model, step); err != nil {
				return err
			}
			evs = append(evs, step...)
		}
	}
	evs = evs[:n]
	turn := projector.New("fold")
	start := time.Now()
	for _, e := range evs {
		if err := projector.Apply(turn, e); err != nil {
			return err
		}
	}
	r.res.FoldEventsPerS = float64(n) / time.Since(start).Seconds()
	return nil
}

// write appends n events of exchanges to conv, compacting at compactAt.
func write(ctx context.Context, l *eventlog.Log, conv string, n, compactAt int) (*projector.Turn, error) {
	turn := projector.New(conv)
	for i := 0; turn.Events < n; i++ {
		for _, step := range exchange(turn, conv, i, compactAt) {
			if err := projector.ApplyAll(turn, step); err != nil {
				return nil, err
			}
			seq, err := l.Append(ctx, conv, turn.Seq, step...)
			if err != nil {
				return nil, err
			}
			turn.Seq = seq
		}
	}
	return turn, nil
}

// loads: median cold Load (snapshot + tail, no cache) of conversations of
// 1,000 and 100,000 events, each with a 40-event tail after its snapshot.
func (r *runner) loads(ctx context.Context, l *eventlog.Log) error {
	measure := func(conv string, n, compactAt int) (float64, error) {
		r.say("load: writing a %d-event conversation (compaction at %d blocks)", n, compactAt)
		turn, err := write(ctx, l, conv, n, compactAt)
		if err != nil {
			return 0, err
		}
		// The first load folds everything and leaves a snapshot behind;
		// then a realistic tail arrives after it.
		if _, err := l.Load(ctx, conv); err != nil {
			return 0, err
		}
		for i := 0; i < 7; i++ {
			for _, step := range exchange(turn, conv, 1_000_000+i, compactAt) {
				if err := projector.ApplyAll(turn, step); err != nil {
					return 0, err
				}
				if turn.Seq, err = l.Append(ctx, conv, turn.Seq, step...); err != nil {
					return 0, err
				}
			}
		}
		var times []float64
		for i := 0; i < 31; i++ {
			start := time.Now()
			got, err := l.Load(ctx, conv)
			if err != nil {
				return 0, err
			}
			times = append(times, float64(time.Since(start).Microseconds())/1000)
			if got.Events != turn.Events {
				return 0, fmt.Errorf("load %s: %d events, wrote %d", conv, got.Events, turn.Events)
			}
		}
		return median(times), nil
	}
	var err error
	if r.res.LoadMs1k, err = measure("load-1k", 1000, 200); err != nil {
		return err
	}
	r.res.LongConversationEvents = r.cfg.LongConversation
	if r.res.LoadMs100k, err = measure("load-100k", r.cfg.LongConversation, 200); err != nil {
		return err
	}
	r.res.LoadMs100kUncompacted, err = measure("load-100k-full", r.cfg.LongConversation, 0)
	return err
}

// bytes: storage for a 200-exchange conversation as events, against storing
// the whole Turn after every exchange (the snapshot-per-step design), each
// in a stream of its own on the same server.
func (r *runner) bytes(ctx context.Context, _ *eventlog.Log) error {
	r.say("bytes: 200 exchanges as events and as a Turn snapshot per exchange")
	l, err := eventlog.Open(ctx, r.nc, eventlog.WithPrefix("benchbytes"))
	if err != nil {
		return err
	}
	js := l.JetStream()
	snaps, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{Name: "BENCHBYTES_TURNS", Subjects: []string{"benchbytes.turns.>"}})
	if err != nil {
		return err
	}
	turn := projector.New("c200")
	for i := 0; i < 200; i++ {
		for _, step := range exchange(turn, "c200", i, 0) {
			if err := projector.ApplyAll(turn, step); err != nil {
				return err
			}
			if turn.Seq, err = l.Append(ctx, "c200", turn.Seq, step...); err != nil {
				return err
			}
		}
		whole, err := msgpack.Marshal(turn)
		if err != nil {
			return err
		}
		if _, err := js.Publish(ctx, "benchbytes.turns.c200", whole); err != nil {
			return err
		}
	}
	ev, err := js.Stream(ctx, l.Names().EventsStream)
	if err != nil {
		return err
	}
	evInfo, err := ev.Info(ctx)
	if err != nil {
		return err
	}
	snInfo, err := snaps.Info(ctx)
	if err != nil {
		return err
	}
	r.res.BytesEvents200 = int64(evInfo.State.Bytes)
	r.res.BytesSnapshots200 = int64(snInfo.State.Bytes)
	return nil
}

func newID() string { return ulid.Make().String() }
