package httpapi

import "encoding/json"

// deltaOrder holds a request's deltas back until the stream has sent an
// event of that request. Deltas travel on core NATS and reach the stream
// at once, while the log's events reach it through a watch: without this,
// a client saw the answer's first words before the user.appended that the
// worker had stored before asking the model, and a UI that places deltas
// under their request had nowhere to put them.
type deltaOrder struct {
	// seen are the requests the stream has sent an event of, oldest first
	// (a few: only a conversation's current requests send deltas).
	seen []string
	// held are deltas of requests not seen yet, in arrival order, at most
	// maxHeld of them: a delta is a preview (the log has the text), so
	// beyond that they are dropped rather than held without bound.
	held    [][]byte
	heldFor []string
	maxHeld int
}

// seenKept bounds deltaOrder.seen.
const seenKept = 64

func newDeltaOrder(maxHeld int) *deltaOrder { return &deltaOrder{maxHeld: maxHeld} }

// requestOf is the request_id of a delta's JSON ("" if it has none).
func requestOf(delta []byte) string {
	var d struct {
		RequestID string `json:"request_id"`
	}
	_ = json.Unmarshal(delta, &d)
	return d.RequestID
}

func (o *deltaOrder) isSeen(request string) bool {
	for _, r := range o.seen {
		if r == request {
			return true
		}
	}
	return false
}

// delta returns the deltas to send now for an arriving delta: itself when
// its request's events have been sent (or it names no request), nothing
// when it is held.
func (o *deltaOrder) delta(data []byte) [][]byte {
	req := requestOf(data)
	if req == "" || o.isSeen(req) {
		return [][]byte{data}
	}
	if len(o.held) < o.maxHeld {
		o.held = append(o.held, data)
		o.heldFor = append(o.heldFor, req)
	}
	return nil
}

// event records that an event caused by request was sent and returns that
// request's held deltas, in order, to send after it.
func (o *deltaOrder) event(request string) [][]byte {
	if request == "" || o.isSeen(request) {
		return nil
	}
	if len(o.seen) == seenKept {
		o.seen = o.seen[1:]
	}
	o.seen = append(o.seen, request)
	var out [][]byte
	kept := 0
	for i, d := range o.held {
		if o.heldFor[i] == request {
			out = append(out, d)
			continue
		}
		o.held[kept], o.heldFor[kept] = d, o.heldFor[i]
		kept++
	}
	clear(o.held[kept:])
	o.held, o.heldFor = o.held[:kept], o.heldFor[:kept]
	return out
}
