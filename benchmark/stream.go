package benchmark

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/embedded"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// A big stream is what the *_1m figures are measured in: Messages
// messages of chat exchanges over Conversations conversations, written in
// a shuffled order so that every conversation's messages are spread over
// the whole history, as many clients writing at once leave them. Three
// 100-event conversations are written into it at chosen places:
//
//   - active: spread over the whole history, its last exchange among the
//     stream's last messages;
//   - idle: spread over the first tenth of the history and silent since;
//   - spread: spread over the whole history, never snapshotted: the one
//     cold loads and history reads are measured on.
//
// Building one takes a while (a million publishes), so it is kept in the
// temporary directory, under a name that says its size and format, and
// reused by later runs; a run only resets the snapshots and caches of the
// three conversations it measures.
type bigStream struct {
	Messages      int
	Conversations int
}

// The measured conversations of a big stream.
const (
	convActive = "m-active"
	convIdle   = "m-idle"
	convSpread = "m-spread"
)

// bigStreamFormat changes whenever what a big stream holds does, so that a
// cached one of another format is never used.
const bigStreamFormat = 2

// bigStreamPrefix is the turnlog prefix of a big stream's installation.
const bigStreamPrefix = "bench1m"

// measuredExchanges is how many exchanges a measured conversation has: 17
// exchanges of 6 events, the last one cut to 4, make 100 events in 51
// messages.
const measuredExchanges = 17

func (b bigStream) dir() string {
	return filepath.Join(os.TempDir(), fmt.Sprintf("turnlog-bench-stream-v%d-%d-%d", bigStreamFormat, b.Messages, b.Conversations))
}

// open starts a server on the big stream's directory, building the stream
// first when no complete copy is there.
func (b bigStream) open(ctx context.Context, say func(string, ...any)) (*embedded.Server, error) {
	dir := b.dir()
	if _, err := os.Stat(filepath.Join(dir, "complete")); err != nil {
		say("big stream: building %d messages over %d conversations in %s (kept for later runs)", b.Messages, b.Conversations, dir)
		start := time.Now()
		if err := b.build(ctx, dir); err != nil {
			return nil, fmt.Errorf("build the big stream: %w", err)
		}
		say("big stream: built in %s", time.Since(start).Round(time.Second))
	} else {
		say("big stream: reusing %s", dir)
	}
	return embedded.Start(embedded.Config{DataDir: dir})
}

// build writes the stream into a fresh directory and moves it to dir once
// complete, so that an interrupted build is never taken for a stream.
func (b bigStream) build(ctx context.Context, dir string) error {
	tmp, err := os.MkdirTemp(filepath.Dir(dir), filepath.Base(dir)+".building-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	srv, err := embedded.Start(embedded.Config{DataDir: tmp})
	if err != nil {
		return err
	}
	nc, err := srv.Connect()
	if err != nil {
		srv.Shutdown()
		return err
	}
	err = b.write(ctx, nc)
	nc.Close()
	srv.Shutdown()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, "complete"), []byte(time.Now().Format(time.RFC3339)+"\n"), 0o644); err != nil {
		return err
	}
	os.RemoveAll(dir)
	return os.Rename(tmp, dir)
}

// slot is one message of the schedule: which conversation writes it.
type slot struct{ conv int }

// write publishes the stream's messages (see each) as Append would store
// them (the step's ID, the conversation's expected last sequence),
// asynchronously, since the sequence each message gets is known in advance
// on a fresh stream.
func (b bigStream) write(ctx context.Context, nc *nats.Conn) error {
	l, err := eventlog.Open(ctx, nc, eventlog.WithPrefix(bigStreamPrefix))
	if err != nil {
		return err
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		return err
	}
	names := l.Names()
	pending := make([]jetstream.PubAckFuture, 0, 4096)
	wait := func() error {
		for _, f := range pending {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return err
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		pending = pending[:0]
		return nil
	}
	var last uint64
	err = b.each(func(m BigStreamMessage) error {
		msg := nats.NewMsg(names.EventsSubject(m.Conversation))
		msg.Data = m.Data
		msg.Header.Set(jetstream.MsgIDHeader, m.StepID)
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(m.Prev, 10))
		f, err := js.PublishMsgAsync(msg)
		if err != nil {
			return err
		}
		pending, last = append(pending, f), m.Seq
		if len(pending) == cap(pending) {
			return wait()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := wait(); err != nil {
		return err
	}
	info, err := js.Stream(ctx, names.EventsStream)
	if err != nil {
		return err
	}
	if got := info.CachedInfo().State.LastSeq; got != last {
		return fmt.Errorf("the stream ends at sequence %d, want %d", got, last)
	}
	return nil
}

// BigStreamMessage is one message of a big stream as a store keeps it.
type BigStreamMessage struct {
	Conversation string
	// Seq is its position in the stream (from 1), Prev the position of
	// its conversation's previous message (0 for the first).
	Seq, Prev uint64
	// StepID is the message's <cause>:<step>; Data its body, as
	// events.Encode wrote it.
	StepID string
	Data   []byte
}

// EachBigStreamMessage calls fn with every message of the big stream the
// *_1m figures are measured in (messages over conversations), in order: for
// another store to hold the same messages (benchmark/postgres).
func EachBigStreamMessage(messages, conversations int, fn func(BigStreamMessage) error) error {
	return bigStream{Messages: messages, Conversations: conversations}.each(fn)
}

// MeasuredConversation is the big stream's 100-event conversation spread
// over its whole history, whose history reads are measured.
const MeasuredConversation = convSpread

// each generates the stream's messages: the exchanges of the filler and
// measured conversations in their scheduled order, one message per step.
func (b bigStream) each(fn func(BigStreamMessage) error) error {
	measured := []string{convActive, convIdle, convSpread}
	type conv struct {
		name      string
		turn      *projector.Turn
		exchanges int
		last      uint64
		pending   [][]events.Event // steps of the exchange being written
	}
	convs := make([]*conv, b.Conversations+len(measured))
	for i := range convs {
		name := fmt.Sprintf("c%05d", i)
		if i >= b.Conversations {
			name = measured[i-b.Conversations]
		}
		convs[i] = &conv{name: name, turn: projector.New(name)}
	}
	var seq uint64
	for _, s := range b.schedule(len(measured)) {
		c := convs[s.conv]
		if len(c.pending) == 0 {
			steps := exchange(c.turn, c.name, c.exchanges, 200)
			if s.conv >= b.Conversations && c.exchanges == measuredExchanges-1 {
				// The last exchange of a measured conversation: the
				// answer and the completion only, for 100 events in all.
				last := steps[2]
				steps[2] = []events.Event{last[1], last[3]}
			}
			c.exchanges++
			for _, step := range steps {
				if err := projector.ApplyAll(c.turn, step); err != nil {
					return err
				}
				c.pending = append(c.pending, step)
			}
		}
		step := c.pending[0]
		c.pending = c.pending[1:]
		data, err := events.Encode(step...)
		if err != nil {
			return err
		}
		seq++
		if err := fn(BigStreamMessage{Conversation: c.name, Seq: seq, Prev: c.last, StepID: eventlog.StepID(step[0].Cause, step[0].Step), Data: data}); err != nil {
			return err
		}
		c.last = seq
	}
	for _, c := range convs[b.Conversations:] {
		if c.turn.Events != 100 {
			return fmt.Errorf("measured conversation %s has %d events, want 100", c.name, c.turn.Events)
		}
	}
	return nil
}

// schedule orders the messages: the fillers' in a shuffled order, and
// the 51 of each measured conversation at random places (seeded, so every
// build is alike) of its range: active and spread over the whole history,
// active's last one near its end; idle over the first tenth. Messages are
// placed one by one, not exchange by exchange: a conversation's steps are
// written between other conversations' steps.
func (b bigStream) schedule(measured int) []slot {
	const perMeasured = 3 * measuredExchanges
	fillers := b.Messages - measured*perMeasured
	out := make([]slot, 0, b.Messages)
	for i := 0; i < fillers; i++ {
		out = append(out, slot{conv: i % b.Conversations})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	insert := func(conv int, from, to float64, lastAtEnd bool) {
		at := make([]int, perMeasured)
		for k := range at {
			at[k] = int((from + (to-from)*rng.Float64()) * float64(fillers))
		}
		if lastAtEnd {
			at[0] = int(to * float64(fillers))
		}
		slices.Sort(at)
		for k := len(at) - 1; k >= 0; k-- { // from the back, so earlier places hold
			out = slices.Insert(out, min(at[k], len(out)), slot{conv: conv})
		}
	}
	insert(b.Conversations+0, 0.001, 0.9999, true) // active
	insert(b.Conversations+1, 0.001, 0.1, false)   // idle
	insert(b.Conversations+2, 0.001, 0.999, false) // spread
	return out
}
