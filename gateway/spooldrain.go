package gateway

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// Recording what the spool holds once NATS is back: oldest first, each
// call read within the bytes in flight, and nothing recorded twice after
// a crash.

// drain records the spooled calls, oldest first, while connected says
// NATS is up; it stops at the first call the log does not take (NATS went
// away again) and leaves it for the next drain, as it leaves the calls of
// a damaged conversation (spoolheld.go). It goes on while calls leave
// the spool: a pass that moved none (a call waiting for room, or for a
// repair) waits for the next drain rather than trying again at once.
func (s *spool) drain(ctx context.Context, r *Recorder, connected func() bool) error {
	done, moved := 0, 0
	defer func() {
		if done > 0 {
			s.log.Info("gateway: recorded the calls spooled while NATS was away", "calls", done, "waiting", s.count())
		}
	}()
	for {
		names, err := s.files()
		if err != nil || len(names) == 0 {
			return err
		}
		before := moved
		if err := s.drainFiles(ctx, r, connected, names, &done, &moved); err != nil || !connected() || ctx.Err() != nil || moved == before {
			return err
		}
	}
}

// count is how many calls wait in the spool (0 when it cannot be read).
func (s *spool) count() int {
	names, _ := s.files()
	return len(names)
}

// drainFiles records the spooled calls names, counting in done those
// recorded and in moved all that left the spool.
func (s *spool) drainFiles(ctx context.Context, r *Recorder, connected func() bool, names []string, done, moved *int) error {
	// The conversations whose calls wait in this pass: a later call of
	// one waits behind the earlier.
	waiting := map[string]bool{}
	for _, n := range names {
		if !connected() || ctx.Err() != nil {
			return nil
		}
		path := filepath.Join(s.dir, n)
		// Asked before the file is read: a call whose answer is kept
		// while it is read would be taken for what it was read as, its
		// provisional file (recorded failed, its answer deleted).
		inFlight := s.forwarding(n)
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("gateway: read spooled call %s: %w", n, err)
		}
		l, err := calls.ParseLogged(data)
		if err != nil {
			// Not lost: set aside under a name the drain skips, and said.
			// No longer waiting once set aside: counted, it would keep
			// the spool non-empty and every later call going to it.
			r.logger.Error("gateway: a spooled call cannot be read; it is set aside as .bad", "file", path, "err", err)
			if err := os.Rename(path, path+".bad"); err != nil {
				return fmt.Errorf("gateway: set aside spooled call %s: %w", n, err)
			}
			s.forget(n)
			*moved++
			continue
		}
		if waiting[l.Conversation] || inFlight || s.held.waits(l.Conversation, time.Now()) {
			// Its call in flight (its file not whole yet), or its
			// conversation damaged: it waits, and its conversation's
			// later calls behind it.
			waiting[l.Conversation] = true
			continue
		}
		recording := path
		if !strings.HasSuffix(n, ".recording") {
			recording = path + ".recording"
			if err := os.Rename(path, recording); err != nil {
				return fmt.Errorf("gateway: spooled call %s: %w", n, err)
			}
		} else if done, err := r.resumeSpooled(ctx, l); s.hold(r, n, l.Conversation, err) {
			waiting[l.Conversation] = true
			continue
		} else if err != nil {
			return fmt.Errorf("gateway: spooled call %s: %w", n, err)
		} else if done {
			// Recorded before a crash, or its outcome now: followed as
			// if recorded now.
			if s.recorded != nil {
				s.recorded(l, l.Conversation)
			}
			s.remove(recording)
			*moved++
			continue
		}
		if dropped, err := r.erasedSince(ctx, l); err != nil {
			return fmt.Errorf("gateway: spooled call %s: %w", n, err)
		} else if dropped {
			s.remove(recording)
			*moved++
			continue
		}
		conv, err := s.record(ctx, r, l)
		if s.hold(r, n, l.Conversation, err) {
			waiting[l.Conversation] = true
			continue
		}
		if errors.Is(err, errBusy) {
			// The gateway's calls hold the room reading it needs: it
			// waits for the next drain.
			return nil
		}
		if err != nil {
			return fmt.Errorf("gateway: record spooled call %s: %w", n, err)
		}
		if s.recorded != nil {
			s.recorded(l, conv)
		}
		delete(s.held, l.Conversation)
		s.remove(recording)
		*done++
		*moved++
	}
	return nil
}

// resumeSpooled looks in its conversation for spooled call l, which the
// drain began to record before it stopped (a crash, or the log refusing
// its outcome): done when the conversation holds its input, its outcome
// recorded now if the conversation lacks it. A call whose input alone
// was stored is open in the log while its answer, which reached the
// client, is in the spool: deleting the file then would lose the answer.
func (r *Recorder) resumeSpooled(ctx context.Context, l *calls.Logged) (done bool, err error) {
	if _, ok := r.log.(eventsLog); !ok {
		return false, nil // a log that cannot be read back: recorded again
	}
	c, err := r.storedCallOf(ctx, l.Conversation, func(p events.InferenceStarted) bool { return p.InferenceID == l.CallID })
	if err != nil || c == nil {
		return false, err
	}
	if !c.finished {
		if err := r.finishStored(ctx, l.Conversation, c, "", l); err != nil {
			return false, err
		}
	}
	return true, nil
}

// record records spooled call l, holding among the gateway's bytes in
// flight what reading it takes (errBusy when there is no room in time),
// or by its hash alone when that is more than they may ever be.
func (s *spool) record(ctx context.Context, r *Recorder, l *calls.Logged) (string, error) {
	line := LoggedLine{Call: l}
	if s.inFlight != nil {
		need := readingBytes(l.Request)
		if need > s.inFlight.limit {
			line.unread = s.inFlight.unreadReason(need, len(l.Request))
		} else {
			held, err := s.inFlight.reserve(ctx, need)
			if err != nil {
				return "", err
			}
			defer held.release()
		}
	}
	res, err := r.recordLogged(ctx, []LoggedLine{line}, false)
	if err != nil {
		return "", errors.Unwrap(err)
	}
	return res[0].Conversation, nil
}

// erasedSince reports whether spooled call l's conversation was erased
// after the call was made (while this gateway was away from NATS): the
// call is then part of what was erased, and is not recorded (said in the
// log, without its content, and counted).
func (r *Recorder) erasedSince(ctx context.Context, l *calls.Logged) (bool, error) {
	if l.Conversation == "" {
		return false, nil
	}
	at, ok, err := r.threads.ErasedAt(ctx, l.Conversation)
	if err != nil || !ok || l.Time.After(at) {
		return false, err
	}
	r.logger.Warn("gateway: a spooled call of a conversation erased after it was made is not recorded",
		"conversation", l.Conversation, "call", l.CallID, "erased_at", at)
	r.metrics.calls.WithLabelValues(string(l.API), "erased").Inc()
	return true, nil
}

func (s *spool) remove(path string) {
	if err := os.Remove(path); err == nil {
		s.forget(path)
	}
}

// forget stops counting file name, which left the spool, for what it was
// counted for.
func (s *spool) forget(name string) {
	id := spoolID(name)
	s.mu.Lock()
	s.used -= s.counted[id]
	delete(s.counted, id)
	s.m.spooled.Set(float64(s.used))
	s.mu.Unlock()
}

// run drains the spool every interval until ctx ends.
func (s *spool) run(ctx context.Context, r *Recorder, connected func() bool, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if connected() {
			if err := s.drain(ctx, r, connected); err != nil && ctx.Err() == nil {
				r.logger.Warn("gateway: spooled calls not recorded yet; retrying", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
