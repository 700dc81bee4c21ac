package worker

// This file holds what a worker publishes for live clients: token deltas
// and its answer to a status ping.

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/turnlog/turnlog/engine"
	"github.com/turnlog/turnlog/events"
)

// Delta is what live clients receive on turnlog.delta.<conversation>.
type Delta struct {
	RequestID string      `json:"request_id"`
	Kind      events.Kind `json:"kind"`
	Text      string      `json:"text"`
}

func (w *Worker) deltas(conv, requestID string) func(engine.Delta) {
	subject := w.names.DeltaSubject(conv)
	return func(d engine.Delta) {
		data, _ := json.Marshal(Delta{RequestID: requestID, Kind: d.Kind, Text: d.Text})
		_ = w.cfg.Conn.Publish(subject, data)
	}
}

// Status is what a worker answers on <prefix>.workers.ping.
type Status struct {
	Name     string    `json:"name"`
	Started  time.Time `json:"started"`
	Handled  int64     `json:"handled"`
	Profiles []string  `json:"profiles"`
}

func (w *Worker) pong(m *nats.Msg) {
	data, _ := json.Marshal(Status{Name: w.cfg.Name, Started: w.started, Handled: w.handled.Load(), Profiles: w.cfg.Profiles.Names()})
	_ = m.Respond(data)
}
