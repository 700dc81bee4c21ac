package eventlog

// This file holds how the log's reservations fit the storage JetStream may
// use: a stream with a byte limit reserves all of it from the server's
// max_store when it is created, so the default limits alone need 1.25 GiB.

import (
	"fmt"
)

// MinMaxStore is the least JetStream storage (max_store) an installation
// can run on: the smallest reservations (1 MiB of pending requests, 1 MiB
// of dead letters) and room for conversations beside them.
const MinMaxStore = 8 << 20

// WithStorageBudget fits the requests' and dead letters' byte limits, which
// JetStream reserves in full, into maxStore, the storage JetStream may use
// (the server's max_store): a quarter of it at most for pending requests
// and a sixteenth for dead letters, never more than their defaults, so at
// least 11/16 of it stays for conversations. Open applies it to new
// streams and raises existing ones' limits to it, never lowers them: a
// stream over a lowered limit would drop pending requests or dead
// letters. A log opened without it (nor WithRequestLimits or
// WithDeadLetterLimits) leaves existing streams' byte limits as they are,
// so a worker or a command does not undo what serve fitted.
func WithStorageBudget(maxStore int64) Option {
	return func(o *options) error {
		if maxStore < MinMaxStore {
			return fmt.Errorf("storage budget %d bytes: turnlog needs at least %d MiB of JetStream storage", maxStore, MinMaxStore>>20)
		}
		o.requestLimits.MaxBytes, o.deadLetters.MaxBytes = Reservations(maxStore)
		o.bytesSet, o.bytesAtLeast = true, true
		return nil
	}
}

// Reservations are the byte limits WithStorageBudget gives the requests
// and dead-letters streams for maxStore bytes of JetStream storage.
func Reservations(maxStore int64) (requests, deadLetters int64) {
	requests = min(DefaultRequestLimits.MaxBytes, max(maxStore/4, 1<<20))
	deadLetters = min(DefaultDeadLetterLimits.MaxBytes, max(maxStore/16, 1<<20))
	return requests, deadLetters
}
