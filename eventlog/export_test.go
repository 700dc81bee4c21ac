package eventlog

import "github.com/nats-io/nats.go/jetstream"

// NeedsUpdate and WantedStreams let the external tests check Open's
// upgrade rule (natstest imports eventlog, so they cannot be internal).
var NeedsUpdate = needsUpdate

func (l *Log) WantedStreams() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{l.requestsConfig(), l.deadLettersConfig()}
}
