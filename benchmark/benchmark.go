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
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Results are the figures of one run. The JSON keys are a stable interface
// for scripts.
type Results struct {
	RawPublishPerS         float64 `json:"raw_publish_per_s"`
	AppendPerS             float64 `json:"append_per_s"`
	AppendBatch4EventsPerS float64 `json:"append_batch4_events_per_s"`
	// FoldEventsPerS is events per second decoded from their stored
	// messages and applied to a Turn; ApplyEventsPerS, applied only.
	FoldEventsPerS        float64 `json:"fold_events_per_s"`
	ApplyEventsPerS       float64 `json:"apply_events_per_s"`
	LoadMs1k              float64 `json:"load_ms_1k"`
	LoadMs100k            float64 `json:"load_ms_100k"`
	LoadMs100kUncompacted float64 `json:"load_ms_100k_uncompacted"`
	// The *_1m figures are measured in a stream of BigStreamMessages
	// messages over BigStreamConversations conversations (1,000,000 and
	// 10,000; fewer with --quick), on 100-event conversations spread over
	// it (see bigStream): loads with a snapshot of one written last near
	// the stream's end and of one idle since its first tenth, loads
	// without a snapshot, and reads of the whole history without one,
	// warm and right after a server restart.
	BigStreamMessages      int     `json:"stream_1m_messages"`
	BigStreamConversations int     `json:"stream_1m_conversations"`
	LoadMs1mActive         float64 `json:"load_ms_1m_active"`
	LoadMs1mIdle           float64 `json:"load_ms_1m_idle"`
	LoadMs1mCold           float64 `json:"load_ms_1m_cold"`
	HistoryMs1mWarm        float64 `json:"history_ms_1m_warm"`
	HistoryMs1mCold        float64 `json:"history_ms_1m_cold"`
	// LoadMs1mColdFirst is the first of the cold loads, which reads the
	// stream and writes the conversation's history cache (the others read
	// the cache); HistoryMs1mColdUncached is a history read after a
	// restart with no history cache.
	LoadMs1mColdFirst       float64 `json:"load_ms_1m_cold_first"`
	HistoryMs1mColdUncached float64 `json:"history_ms_1m_cold_uncached"`
	// WorkerPeakRSSMB is the peak resident memory of a `turnlog worker`
	// process after WorkerMemoryRequests requests over
	// WorkerMemoryConversations conversations (10,000 over 1,000; fewer
	// with --quick).
	WorkerPeakRSSMB           float64 `json:"worker_peak_rss_mb"`
	WorkerMemoryRequests      int     `json:"worker_memory_requests"`
	WorkerMemoryConversations int     `json:"worker_memory_conversations"`
	BytesEvents200            int64   `json:"bytes_events_200"`
	BytesSnapshots200         int64   `json:"bytes_snapshots_200"`
	// BytesEvents200Disk is what the 200-exchange conversation's events
	// take in the files of an events stream with S2 compression, and
	// BytesEvents200DiskUncompressed without: the stream's message block,
	// once full (JetStream compresses a block when it starts the next).
	BytesEvents200Disk             int64 `json:"bytes_events_200_disk"`
	BytesEvents200DiskUncompressed int64 `json:"bytes_events_200_disk_uncompressed"`
	EventBytes                     int   `json:"event_bytes"`
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
	// Fold is the number of events folded per round (200,000).
	Fold int
	// LongConversation is the size of the long conversation (100,000).
	LongConversation int
	// BigMessages and BigConversations size the big stream the *_1m
	// figures are measured in (1,000,000 and 10,000).
	BigMessages, BigConversations int
	// MemoryRequests and MemoryConversations size the worker memory run
	// (10,000 and 1,000); WorkerCommand runs a worker process (the
	// turnlog binary and "worker"), without which it is skipped.
	MemoryRequests, MemoryConversations int
	WorkerCommand                       []string
	// Progress, when set, receives one line per phase.
	Progress io.Writer
}

func (c *Config) defaults() {
	if c.Publishes == 0 {
		c.Publishes = 20000
	}
	if c.Fold == 0 {
		c.Fold = 200_000
	}
	if c.LongConversation == 0 {
		c.LongConversation = 100_000
	}
	if c.BigMessages == 0 {
		c.BigMessages = 1_000_000
	}
	if c.BigConversations == 0 {
		c.BigConversations = 10_000
	}
	if c.MemoryRequests == 0 {
		c.MemoryRequests = 10_000
	}
	if c.MemoryConversations == 0 {
		c.MemoryConversations = 1_000
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
	r := &runner{cfg: cfg, nc: nc, dir: dir}
	return r.run(ctx)
}

type runner struct {
	cfg Config
	nc  *nats.Conn
	dir string // the server's data directory
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
	steps := []func(context.Context, *eventlog.Log) error{r.publishes, r.fold, r.loads, r.bigLoads, r.bytes, r.workerMemory}
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

func newID() string { return ulid.Make().String() }
