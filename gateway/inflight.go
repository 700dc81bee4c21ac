package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/semaphore"
)

// DefaultMaxInFlightBytes bounds the request bodies the gateway holds at
// once unless Config says otherwise: eight bodies of the default
// --max-body, or some twenty thousand calls of a typical 12 KB.
const DefaultMaxInFlightBytes = 256 << 20

// DefaultInFlightWait is how long a call waits for room among the bodies
// in flight before it is answered 503 (an SDK retries it), unless Config
// says otherwise.
const DefaultInFlightWait = 10 * time.Second

// inFlight bounds, in bytes, the request bodies of the calls the gateway
// holds at once: every recorded call keeps its body from the moment it is
// read until its outcome is recorded, so without a bound a few clients
// sending large bodies at once would exhaust the gateway's memory. A call
// reserves its declared Content-Length (or --max-body when it declares
// none) before its body is read, gives back what it did not use once it
// is read, and the rest when it ends. A call that finds no room waits for
// it, up to wait.
type inFlight struct {
	sem   *semaphore.Weighted
	limit int64
	wait  time.Duration
}

func newInFlight(limit int64, wait time.Duration) *inFlight {
	return &inFlight{sem: semaphore.NewWeighted(limit), limit: limit, wait: wait}
}

// errBusy is a call that found no room among the bodies in flight.
var errBusy = errors.New("the gateway holds its limit of request bytes in flight (--max-inflight-bytes)")

// reserve holds n bytes (at most the limit) until release.
func (f *inFlight) reserve(ctx context.Context, n int64) (*reservation, error) {
	n = min(max(n, 0), f.limit)
	ctx, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	if err := f.sem.Acquire(ctx, n); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, errBusy
		}
		return nil, err // the client went away
	}
	return &reservation{f: f, n: n}, nil
}

// reservation is what one call holds.
type reservation struct {
	f *inFlight
	n int64
}

// shrink gives back what the call holds beyond n bytes.
func (r *reservation) shrink(n int64) {
	if n >= 0 && n < r.n {
		r.f.sem.Release(r.n - n)
		r.n = n
	}
}

// release gives back everything the call holds.
func (r *reservation) release() { r.shrink(0) }

// grow holds n bytes in all (more than now) for the call, waiting for
// room as reserve does; false when there is none within the wait (or the
// client went away) or n is over the limit (what the call holds then is
// unchanged).
func (r *reservation) grow(ctx context.Context, n int64) bool {
	if n <= r.n {
		return true
	}
	if n > r.f.limit {
		return false
	}
	if r.f.sem.TryAcquire(n - r.n) {
		r.n = n
		return true
	}
	// Not while holding what it has: two calls each holding their body
	// and waiting for more would wait for each other. It waits for all
	// of n, holding nothing (its body, read already, is not counted
	// meanwhile).
	r.release()
	ctx, cancel := context.WithTimeout(ctx, r.f.wait)
	defer cancel()
	if r.f.sem.Acquire(ctx, n) != nil {
		return false
	}
	r.n = n
	return true
}

// unreadReason is why a call whose reading takes need bytes (a body of
// size bytes) is recorded by its hash alone: more than the limit.
func (f *inFlight) unreadReason(need int64, size int) string {
	return fmt.Sprintf("reading it would take about %d MiB of the gateway's memory (%d bytes holding many JSON objects), more than --max-inflight-bytes (%d MiB); recorded by the hash of its bytes alone",
		need>>20, size, f.limit>>20)
}

// readingCost is what reading a request body into blocks is taken to
// hold in memory beyond the body, by JSON object in it (each a message,
// a part, a tool or its schema's member): a call of many tiny messages
// takes some 80 times its size once read (800,000 messages of a 27 MB
// body took 2.1 GB), one of long texts some 3 times.
const readingCost = 2560

// readingBytes is what the call of body is taken to hold once read: the
// body twice (its bytes and their copy in blocks) and readingCost a JSON
// object.
func readingBytes(body []byte) int64 {
	// Every '{' counted first (fast): an estimate from above, taken as
	// it is while it is small; the objects alone are counted (a scan of
	// the strings) only when it is not.
	est := 2*int64(len(body)) + int64(bytes.Count(body, []byte("{")))*readingCost
	if est <= 64<<20 {
		return est
	}
	return 2*int64(len(body)) + int64(jsonObjects(body))*readingCost
}

// jsonObjects counts the objects of body, a JSON text: its '{' outside
// strings (a '{' in a message's text, a JSON document pasted as text, is
// no object to read).
func jsonObjects(body []byte) int {
	n, inString, escaped := 0, false, false
	for _, c := range body {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case c == '{' && !inString:
			n++
		}
	}
	return n
}
