package gateway

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Requests the gateway records beside model calls (a change to a
// provider's conversation, a background response's end): the provider's
// answer is held whole until what it says is stored, then passed on.

// appendPlanned appends plan's events to conv, planned on its Turn (the
// cache's, else the log's), again on the log's Turn after a conflict, and
// returns the Turn they were applied to (nil on an error), which the
// caller puts back in the cache once done with it. A plan of no events
// appends nothing.
func (r *Recorder) appendPlanned(ctx context.Context, conv string, plan func(*projector.Turn) ([]events.Event, error)) (*projector.Turn, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	for attempt := 0; ; attempt++ {
		turn, _, err := r.turn(ctx, conv, false)
		if err != nil {
			return nil, err
		}
		evs, err := plan(turn)
		if err != nil {
			return nil, err
		}
		if len(evs) == 0 {
			return turn, nil
		}
		seq, err := r.log.Append(ctx, conv, turn.Seq, evs...)
		if errors.Is(err, eventlog.ErrConflict) && attempt < appendAttempts {
			r.metrics.conflicts.Inc()
			continue
		}
		if err != nil {
			return nil, err
		}
		turn.Seq = seq
		return turn, nil
	}
}

// heldResponse holds the provider's answer to a change until it is
// recorded: its status, headers and body (up to limit bytes; over says
// there was more, which is dropped, and the answer is not passed on).
type heldResponse struct {
	header http.Header
	status int
	body   bytes.Buffer
	limit  int64
	over   bool
}

func (h *heldResponse) Header() http.Header { return h.header }

func (h *heldResponse) WriteHeader(status int) {
	if h.status == 0 {
		h.status = status
	}
}

func (h *heldResponse) Write(p []byte) (int, error) {
	h.WriteHeader(http.StatusOK)
	n := len(p)
	if room := h.limit - int64(h.body.Len()); int64(n) > room {
		h.over = true
		p = p[:max(room, 0)]
	}
	h.body.Write(p)
	return n, nil
}

// send writes the held answer to w; one larger than the limit, whose end
// was dropped, is not passed on cut: w gets 502 saying so.
func (h *heldResponse) send(w http.ResponseWriter) {
	if h.over {
		writeError(w, false, http.StatusBadGateway, "the provider's answer is larger than this gateway's limit of "+
			strconv.FormatInt(h.limit, 10)+" bytes (--max-body), so turnlog cannot pass it on")
		return
	}
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(h.body.Len()))
	if h.status == 0 {
		h.status = http.StatusOK
	}
	w.WriteHeader(h.status)
	_, _ = w.Write(h.body.Bytes())
}
