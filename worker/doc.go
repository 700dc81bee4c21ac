// Package worker serves chat requests from JetStream: it pulls requests,
// runs them through a profile's middleware chain and engine, and appends
// every step to the conversation's log.
//
// Ordering: the requests stream hashes each conversation into one of N
// partitions as it stores a request (a stream subject transform), and each
// partition has one durable consumer with MaxAckPending 1. So a partition,
// and with it every conversation in it, has at most one request in flight
// across all workers, in the order sent, while different partitions run in
// parallel on any number of workers. Appends are also fenced by the
// conversation's expected last sequence, so even a request redelivered to a
// second worker while the first still runs cannot interleave its events:
// the slower one gets a conflict and resumes from the log.
//
// Affinity: the partition consumers use prioritized pulls, and each worker
// pulls each partition at a priority hashed from its name, so a partition's
// requests go to one preferred worker while it pulls, and to the next one
// the moment it stops. That worker keeps the conversations' Turns cached
// and starts a first delivery from its cache; the first append's
// expected-sequence check refuses a stale one.
//
// Crash safety: every step is committed with its <cause>:<step> ID before
// the next begins, and the request is acknowledged only after its
// request.completed or request.failed is stored. A redelivered request
// reads the conversation's last message and resumes after the last step
// the log holds, or just acknowledges when the request already ended.
package worker
