// Package eventlog stores conversations as event logs in NATS JetStream: one
// subject per conversation, one message per step (the step's events travel
// together, so they land all or none), optimistic concurrency through the
// subject's expected last sequence, and idempotent retries through the
// message ID <cause>:<step>.
//
// Loading reads a conversation's latest snapshot and only the tail after it,
// so its cost does not grow with the stream or with the conversation's
// history. Snapshots are a cache: a corrupt or stale one is detected and
// ignored, and the log alone is the truth.
package eventlog
