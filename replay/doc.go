// Package replay looks back at conversations: re-projection step by step,
// verification of recorded input hashes, re-runs through today's
// middleware chain, and the block-level diff of two Turns behind
// `turnlog diff-turns`.
//
// The diff (Diff, Result) is pure: no I/O, no NATS. It recognises moves,
// changes, duplicates and the adjacency violations providers reject, so an
// ordering bug (a moved system prompt, a duplicated block, a reasoning item
// without its follower) shows up as one line rather than a wall of
// removals and additions.
package replay
