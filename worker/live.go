package worker

// This file holds what a worker publishes for live clients: token deltas
// and its answer to a status ping.

import (
	"context"
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/profile"
)

// Delta is what live clients receive on turnlog.delta.<conversation>.
type Delta struct {
	RequestID string      `json:"request_id"`
	Kind      events.Kind `json:"kind"`
	Text      string      `json:"text"`
	// Step is the step of the request that the text will be stored in:
	// every event of the steps before it (a tool call, its result, the
	// model call's inference.started) is stored before the text streams.
	// A client that shows events and text together (interactive chat)
	// holds the text until it has seen step Step-1, so that a tool's
	// result never shows after the answer it led to. 0 from workers that
	// predate it.
	Step int `json:"step,omitempty"`
}

// deltas is where a request's streamed text goes: coalesced (see
// deltaBatch) onto the conversation's delta subject.
func (w *Worker) deltas(conv, requestID string) *deltaBatch {
	subject := w.names.DeltaSubject(conv)
	return newDeltaBatch(requestID, func(data []byte) { _ = w.cfg.Conn.Publish(subject, data) })
}

// Status is what a worker answers on <prefix>.workers.ping.
type Status struct {
	Name     string    `json:"name"`
	Started  time.Time `json:"started"`
	Handled  int64     `json:"handled"`
	Profiles []string  `json:"profiles"`
	// Summaries say who answers for each profile: provider, model and
	// endpoint as this worker's engines use them (`turnlog status`).
	Summaries []profile.Summary `json:"summaries,omitempty"`
	// Storage is the JetStream storage of the server the worker runs
	// beside (Config.Storage), when it runs beside one.
	Storage *Storage `json:"storage,omitempty"`
}

// Storage is what a NATS server may store and holds, in bytes. A client
// of JetStream sees what its account stores but not the server's limit nor
// the disk: the process that runs the server (turnlog serve) tells its
// workers, whose status `turnlog status` reads.
type Storage struct {
	// MaxStore is the server's JetStream limit (max_store).
	MaxStore int64 `json:"max_store"`
	// Used is what JetStream stores; MaxStore-Used is what it may still take.
	Used int64 `json:"used"`
	// Reserved is what streams with a byte limit reserve of MaxStore.
	Reserved int64 `json:"reserved"`
	// DiskFree is the free space of the store's file system (-1: unknown).
	DiskFree int64 `json:"disk_free"`
}

func (w *Worker) pong(*nats.Msg) {
	st := Status{Name: w.cfg.Name, Started: w.started, Handled: w.handled.Load(), Profiles: w.cfg.Profiles.Names(),
		Summaries: w.cfg.Profiles.Summaries()}
	if w.cfg.Storage != nil {
		st.Storage = w.cfg.Storage()
	}
	data, _ := json.Marshal(st)
	// On the status subject, whatever reply the ping names: the worker
	// role answers no requests (natsauth), so that no one can have it
	// publish onto a subject of their choosing.
	if err := w.cfg.Conn.Publish(w.names.WorkersStatus(), data); err != nil {
		w.log.Warn("status ping not answered", "err", err)
	}
}

// FirstStatusWait is how long Statuses waits for the first worker's
// answer: `turnlog status` takes that long when no worker runs.
const FirstStatusWait = 2 * time.Second

// statusRePing is how often Statuses pings again while no worker has
// answered: a ping sent before a worker listens (status run as serve
// starts) is lost.
const statusRePing = 250 * time.Millisecond

// Statuses asks the running workers who they are (the status ping) and
// gathers what they say on names.WorkersStatus until quiet passes without
// a word after an answer: what `turnlog status` shows. The first answer
// is waited for up to FirstStatusWait (quiet, if longer): a worker on a
// busy machine or across a slow link answers later than quiet, and status
// would say that no worker runs. Until then the ping is sent again every
// statusRePing, for a worker that starts listening meanwhile; a worker
// that answers more than once is listed once.
func Statuses(ctx context.Context, nc *nats.Conn, names eventlog.Names, quiet time.Duration) ([]Status, error) {
	sub, err := nc.SubscribeSync(names.WorkersStatus())
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	first := time.Now().Add(max(quiet, FirstStatusWait))
	var (
		out   []Status
		seen  = map[string]bool{}
		until time.Time // quiet after the last new answer
	)
	for {
		wait := time.Until(until)
		if len(out) == 0 {
			if err := nc.Publish(names.WorkersPing(), nil); err != nil {
				return nil, err
			}
			wait = min(statusRePing, time.Until(first))
		}
		if wait <= 0 {
			return out, nil
		}
		wctx, cancel := context.WithTimeout(ctx, wait)
		m, err := sub.NextMsgWithContext(wctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			if len(out) == 0 {
				continue // ping again, until first
			}
			return out, nil
		}
		var ws Status
		if json.Unmarshal(m.Data, &ws) == nil && !seen[ws.Name] {
			seen[ws.Name] = true
			out = append(out, ws)
			until = time.Now().Add(quiet)
		}
	}
}
