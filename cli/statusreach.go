package cli

// This file holds how `turnlog status` reads the streams and buckets of a
// cluster in trouble: each on its own, at once and within lookupWait, so
// that one without a leader (a server killed a moment ago, an R1 bucket on
// a server that is down) is a row marked unavailable, not the command's
// failure, and a healthy installation waits for nothing.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// lookupWait bounds each stream lookup of status: a stream with a leader
// answers in milliseconds; one without gets no answer at all.
const lookupWait = 4 * time.Second

// jsErrCodeStreamOffline is the server's answer for a stream none of whose
// servers is up (nats-server's JSStreamOfflineErr).
const jsErrCodeStreamOffline jetstream.ErrorCode = 10118

// jsErrCodeClusterNotAvail is the server's answer while JetStream has no
// meta leader (nats-server's JSClusterNotAvailErr).
const jsErrCodeClusterNotAvail jetstream.ErrorCode = 10008

// lookedUp is one stream as status looked it up: its info, or why not.
type lookedUp struct {
	info *jetstream.StreamInfo
	err  error
}

// lookUpStreams looks every stream up at once (streamUnlessRefused), each
// within lookupWait, and returns them by name.
func lookUpStreams(ctx context.Context, js jetstream.JetStream, streams []string) map[string]lookedUp {
	out := make(map[string]lookedUp, len(streams))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for _, name := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(ctx, lookupWait)
			defer cancel()
			var r lookedUp
			s, err := streamUnlessRefused(ctx, js, name)
			if err != nil {
				r.err = err
			} else {
				r.info = s.CachedInfo()
			}
			mu.Lock()
			out[name] = r
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// unavailableReason says in a few words why a stream could not be read.
func unavailableReason(err error) string {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return "not created"
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeStreamOffline:
		return "no leader: every server that holds it is down (stream is offline)"
	case errors.As(err, &apiErr) && apiErr.ErrorCode == jsErrCodeClusterNotAvail:
		return "no leader: the JetStream cluster has no meta leader"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, nats.ErrTimeout):
		return fmt.Sprintf("no leader: no answer within %s (an election, or too few of its servers up)", lookupWait)
	case errors.Is(err, nats.ErrNoResponders):
		return "no JetStream server answers"
	}
	return err.Error()
}

// unavailableError is status's error when some rows could not be read: it
// names them, and exits 1 (status printed what it could).
func unavailableError(rows []string) error {
	if len(rows) == 0 {
		return nil
	}
	return &exitError{code: 1, err: fmt.Errorf("status is incomplete, these could not be read: %s", strings.Join(rows, "; "))}
}
