package benchmark

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
)

// loadRepeats is how many times each big-stream load is timed; the figure
// is the median.
const loadRepeats = 31

// bigLoads measures, in the big stream (see bigStream): warm loads
// (snapshot present) of the active and the idle conversation, cold loads
// (no snapshot) of the spread one, and reads of its whole history, warm
// and right after a server restart.
func (r *runner) bigLoads(ctx context.Context, _ *eventlog.Log) error {
	b := bigStream{Messages: r.cfg.BigMessages, Conversations: r.cfg.BigConversations}
	r.res.BigStreamMessages, r.res.BigStreamConversations = b.Messages, b.Conversations
	srv, err := b.open(ctx, r.say)
	if err != nil {
		return err
	}
	defer func() { srv.Shutdown() }()
	l, nc, err := openBig(ctx, srv)
	if err != nil {
		return err
	}
	defer func() { nc.Close() }()
	if err := resetMeasured(ctx, l); err != nil {
		return err
	}

	r.say("big stream: warm loads of the active and the idle conversation")
	for _, m := range []struct {
		conv string
		out  *float64
	}{{convActive, &r.res.LoadMs1mActive}, {convIdle, &r.res.LoadMs1mIdle}} {
		// The first load folds the history and leaves a snapshot, as a
		// worker serving the conversation would.
		if _, err := l.Load(ctx, m.conv); err != nil {
			return err
		}
		if *m.out, err = timeLoads(func() (int, error) {
			t, err := l.Load(ctx, m.conv)
			if err != nil {
				return 0, err
			}
			return t.Events, nil
		}); err != nil {
			return fmt.Errorf("load %s: %w", m.conv, err)
		}
	}

	r.say("big stream: cold loads (no snapshot) and history reads of the spread conversation")
	cold, err := eventlog.Open(ctx, nc, eventlog.WithPrefix(bigStreamPrefix), eventlog.WithSnapshotEvery(math.MaxInt32))
	if err != nil {
		return err
	}
	// The first cold load reads the stream and writes the history cache,
	// which the next ones read.
	start := time.Now()
	if t, err := cold.Load(ctx, convSpread); err != nil {
		return fmt.Errorf("cold load: %w", err)
	} else if t.Events != 100 {
		return fmt.Errorf("cold load: %d events, want 100", t.Events)
	}
	r.res.LoadMs1mColdFirst = ms(time.Since(start))
	if r.res.LoadMs1mCold, err = timeLoads(func() (int, error) {
		t, err := cold.Load(ctx, convSpread)
		if err != nil {
			return 0, err
		}
		return t.Events, nil
	}); err != nil {
		return fmt.Errorf("cold load: %w", err)
	}
	history := func(l *eventlog.Log) (int, error) {
		n := 0
		for _, err := range l.Events(ctx, convSpread) {
			if err != nil {
				return 0, err
			}
			n++
		}
		return n, nil
	}
	if r.res.HistoryMs1mWarm, err = timeLoads(func() (int, error) { return history(l) }); err != nil {
		return fmt.Errorf("history: %w", err)
	}

	// Cold: the first read after the server starts, its caches empty; the
	// history cache written by the reads above, then without it.
	var colds []float64
	for i := 0; i < 4; i++ {
		if i == 3 {
			if err := resetMeasured(ctx, l); err != nil {
				return err
			}
		}
		nc.Close()
		srv.Shutdown()
		if srv, err = embedded.Start(embedded.Config{DataDir: b.dir()}); err != nil {
			return err
		}
		if l, nc, err = openBig(ctx, srv); err != nil {
			return err
		}
		start := time.Now()
		n, err := history(l)
		if err != nil {
			return fmt.Errorf("history after a restart: %w", err)
		}
		if n != 100 {
			return fmt.Errorf("history after a restart: %d events, want 100", n)
		}
		colds = append(colds, ms(time.Since(start)))
	}
	r.res.HistoryMs1mCold, r.res.HistoryMs1mColdUncached = median(colds[:3]), colds[3]
	return nil
}

// timeLoads times loadRepeats calls of load, each of which must give 100
// events, and returns the median in milliseconds.
func timeLoads(load func() (int, error)) (float64, error) {
	var times []float64
	for i := 0; i < loadRepeats; i++ {
		start := time.Now()
		n, err := load()
		if err != nil {
			return 0, err
		}
		times = append(times, ms(time.Since(start)))
		if n != 100 {
			return 0, fmt.Errorf("%d events, want 100", n)
		}
	}
	return median(times), nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func openBig(ctx context.Context, srv *embedded.Server) (*eventlog.Log, *nats.Conn, error) {
	nc, err := srv.Connect()
	if err != nil {
		return nil, nil, err
	}
	l, err := eventlog.Open(ctx, nc, eventlog.WithPrefix(bigStreamPrefix))
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return l, nc, nil
}

// resetMeasured deletes what earlier runs left of the measured
// conversations besides their events: their snapshots and history caches.
func resetMeasured(ctx context.Context, l *eventlog.Log) error {
	for _, bucket := range []string{l.Names().SnapshotsBucket, l.Names().HistoryBucket} {
		kv, err := l.JetStream().KeyValue(ctx, bucket)
		if err != nil {
			return err
		}
		for _, c := range []string{convActive, convIdle, convSpread} {
			if err := kv.Purge(ctx, c); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
				return err
			}
		}
	}
	return nil
}

// RunBigLoads runs only the big-stream step (the *_1m figures), for a
// comparison with another store in the same run (benchmark/postgres).
func RunBigLoads(ctx context.Context, cfg Config) (Results, error) {
	cfg.defaults()
	r := &runner{cfg: cfg}
	err := r.bigLoads(ctx, nil)
	return r.res, err
}
