// Package projector folds events into a Turn: the ordered blocks a model
// receives plus the request's data. The fold is the only way a Turn ever
// changes, in the worker, in a middleware's Tx and in replay alike, so what
// the model saw and what the log says cannot differ.
//
// The package is pure: no I/O, no NATS. Snapshots are a cache of its
// output, never a source of truth.
package projector
