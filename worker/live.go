package worker

// This file holds what a worker publishes for live clients: token deltas
// and its answer to a status ping.

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/events"
)

// Delta is what live clients receive on turnlog.delta.<conversation>.
type Delta struct {
	RequestID string      `json:"request_id"`
	Kind      events.Kind `json:"kind"`
	Text      string      `json:"text"`
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

func (w *Worker) pong(m *nats.Msg) {
	st := Status{Name: w.cfg.Name, Started: w.started, Handled: w.handled.Load(), Profiles: w.cfg.Profiles.Names()}
	if w.cfg.Storage != nil {
		st.Storage = w.cfg.Storage()
	}
	data, _ := json.Marshal(st)
	_ = m.Respond(data)
}
