package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/events"
)

// DefaultSpoolBytes bounds the spool unless Config says otherwise.
const DefaultSpoolBytes = 1 << 30

// ErrSpoolFull is why a call is refused (503) while NATS is away and the
// spool holds its limit: refused before it is forwarded, rather than
// forwarded and not recorded.
var ErrSpoolFull = errors.New("NATS is unreachable and the spool of calls waiting to be recorded is full")

// spool keeps the calls forwarded while NATS is away (--record-optional),
// one file each in its directory, written and synced before the response's
// last byte reaches the client, and records them once NATS is back, oldest
// first, each with its logged time. It is bounded in bytes: a call that
// might not fit is refused before it is forwarded. A file is renamed
// *.recording while it is recorded, so that after a crash the call is
// looked up in its conversation before it is recorded again.
type spool struct {
	dir   string
	limit int64
	lock  *os.File
	m     *Metrics
	parse *calls.ParseCache
	log   *slog.Logger
	// recorded is told of each spooled call once recorded, in the
	// conversation it was recorded in (Gateway.watchSpooled).
	recorded func(l *calls.Logged, conv string)
	// inFlight is the gateway's bound on the bytes its calls hold: a
	// spooled call is read into blocks only within it, when admitted as
	// when recorded.
	inFlight *inFlight

	mu   sync.Mutex
	used int64 // bytes of the files and of the calls admitted
	// counted is what used counts for each file, by call ID: a file
	// leaves the spool with what it was counted for, whatever its size
	// is by then (a damaged file may have lost bytes).
	counted map[string]int64
	// held are the damaged conversations whose calls wait (the drain's).
	held heldConversations
	// inFlightCalls are the calls forwarded whose answer is not kept yet,
	// by ID: their files are provisional (spoolprovisional.go).
	inFlightCalls map[string]bool
	// released: the gateway stops (release): no call is taken in, and
	// the lock is given up once the calls in flight are whole.
	released bool
	seq      atomic.Int64
}

// spoolCall is a call forwarded while NATS is away.
type spoolCall struct {
	Conversation string
	threading    string
	id           string
	api          calls.API
	body         []byte
	req          *calls.Request
	at           time.Time
	reserved     int64
	finished     bool
	compact      bool  // a call to calls.CompactPath
	provisional  int64 // the size of its file until its answer is kept (spoolprovisional.go)
	headers      map[string]string
	account      http.Header // OpenAI-Organization, OpenAI-Project
}

// openSpool opens (creating) dir, locked for this process: two gateways
// draining one spool would record its calls twice.
func openSpool(dir string, limit int64, m *Metrics, parse *calls.ParseCache, log *slog.Logger) (*spool, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("gateway: the spool directory: %w", err)
	}
	if err := checkSpoolDir(dir); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway: the spool directory: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("gateway: the spool directory %s is in use by another gateway (each needs its own --spool-dir): %w", dir, err)
	}
	s := &spool{dir: dir, limit: limit, lock: f, m: m, parse: parse, log: log, counted: make(map[string]int64), held: heldConversations{}, inFlightCalls: make(map[string]bool)}
	s.removeLeftovers()
	names, err := s.files()
	if err != nil {
		f.Close()
		return nil, err
	}
	for _, n := range names {
		if fi, err := os.Stat(filepath.Join(dir, n)); err == nil {
			s.used += fi.Size()
			s.counted[spoolID(n)] = fi.Size()
		}
	}
	m.spooled.Set(float64(s.used))
	return s, nil
}

// removeLeftovers removes the temporary files (writeFile's .tmp-*) of a
// gateway that stopped while it wrote one: this one holds the spool's
// lock, so none of their writers is alive, and none is a call (its file
// is renamed into place whole, or not at all).
func (s *spool) removeLeftovers() {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return // said by files, next
	}
	for _, e := range ents {
		if n := e.Name(); strings.HasPrefix(n, ".tmp-") {
			if err := os.Remove(filepath.Join(s.dir, n)); err != nil {
				s.log.Warn("gateway: a spool file left half-written by a stopped gateway cannot be removed", "file", filepath.Join(s.dir, n), "err", err)
			}
		}
	}
}

// waiting reports whether calls are in the spool or on their way to it:
// while they are, new calls go to the spool too, so that calls are
// recorded in the order they were made.
func (s *spool) waiting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.used > 0
}

// files lists the calls waiting, oldest first.
func (s *spool) files() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("gateway: read the spool: %w", err)
	}
	var names []string
	for _, e := range ents {
		if n := e.Name(); strings.HasSuffix(n, ".call") || strings.HasSuffix(n, ".call.recording") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

// spoolID is the call ID a spool file is named by (n, its name, without
// its suffixes).
func spoolID(n string) string {
	id, _, _ := strings.Cut(filepath.Base(n), ".")
	return id
}

// spoolOverhead is what a spool file holds besides the request body and
// the response, at most (the members of calls.Logged).
const spoolOverhead = 4096

// admit takes a call in while NATS is away: it reserves room for its
// request (the response is kept if it fits, else the call is recorded
// failed for want of room), and finds its conversation as far as this
// gateway knows it (local: the calls it recorded and spooled), and,
// when NATS is up (calls wait behind spooled ones, a damaged
// conversation's, say), as the installation's index knows it (shared,
// nil while NATS is away): a call continuing another gateway's
// conversation continues it. A call too costly to read (unread) is not
// read: it is threaded only when named. ctx bounds the lookup in the
// shared index (see lookupContext).
func (s *spool) admit(ctx context.Context, api calls.API, body []byte, compact bool, headers map[string]string, account http.Header, named string, local, shared *calls.Threads, unread bool) (*spoolCall, error) {
	c := &spoolCall{id: ulid.Make().String(), api: api, body: body, compact: compact, headers: headers, account: account, at: time.Now(), reserved: int64(len(body))*2 + spoolOverhead}
	if unread {
		// Not read.
	} else if req, err := s.parse.ParseRequest(api, body); err == nil {
		c.req = req
	}
	switch {
	case named != "":
		if err := events.ValidateConversationID(named); err != nil {
			return nil, &ConversationIDError{err}
		}
		c.Conversation, c.threading = named, calls.ThreadExplicit
	case c.req != nil && c.req.ProviderConversation != "":
		c.Conversation, c.threading = calls.ProviderConversationID(c.req.ProviderConversation), calls.ThreadExplicit
	case c.req != nil && c.req.PreviousResponseID != "":
		// An earlier call's response would branch the conversation: a
		// fork, which cannot be made without the log (see below).
		if ref, latest, ok := lookUp(local, shared, func(x *calls.Threads) (calls.Ref, bool, bool, error) {
			return x.Response(ctx, c.req.PreviousResponseID)
		}); ok && latest {
			c.Conversation, c.threading = ref.Conversation, calls.ThreadExplicit
		}
	case c.req != nil:
		// A fork of a state recorded earlier cannot be made without the
		// log: it starts a conversation.
		if ref, latest, ok := lookUp(local, shared, func(x *calls.Threads) (calls.Ref, bool, bool, error) {
			return x.Find(ctx, c.req.Scope, c.req.RequestBlocks(), c.req.RequestChain())
		}); ok && latest {
			c.Conversation, c.threading = ref.Conversation, calls.ThreadInferred
		}
	}
	if c.Conversation == "" {
		c.Conversation, c.threading = ulid.Make().String(), calls.ThreadNew
	}
	s.mu.Lock()
	if s.used+c.reserved > s.limit {
		defer s.mu.Unlock()
		return nil, fmt.Errorf("%w (%d of --spool-bytes %d used; this call needs %d)", ErrSpoolFull, s.used, s.limit, c.reserved)
	}
	if s.used == 0 {
		// The first call of an outage: an operator reads that calls are
		// forwarded unrecorded for now, and where they wait.
		s.log.Warn("gateway: NATS is unreachable: calls are forwarded and kept in the spool until it is back (--record-optional)",
			"spool", s.dir, "limit_bytes", s.limit)
	}
	s.used += c.reserved
	s.m.spooled.Set(float64(s.used))
	s.mu.Unlock()
	if err := s.provision(c); err != nil {
		return nil, err
	}
	return c, nil
}

// lookUp finds what a spooled call goes on from with find, in this
// gateway's own index first: it alone holds the calls spooled and not
// yet recorded (a state of one, or one after the state found, settles
// it). A recorded state it holds as its conversation's latest is asked of
// the shared index too when NATS is up (shared not nil), as a live call's
// guess is verified: another gateway may have gone on from it since, and
// the call is then a fork, not the conversation's next call (recorded
// there, it would rewrite the conversation's history).
func lookUp(local, shared *calls.Threads, find func(*calls.Threads) (calls.Ref, bool, bool, error)) (ref calls.Ref, latest, ok bool) {
	ref, latest, ok, _ = find(local)
	if shared == nil || ok && (!latest || ref.Events < 0) {
		return ref, latest, ok
	}
	if sref, slatest, sok, err := find(shared); err == nil && sok {
		return sref, slatest, true
	}
	return ref, latest, ok
}

// keep writes a call's file and syncs it; it returns once the call is
// durable on disk. A response that would not fit is left out and the call
// kept as failed for want of room, which its reservation always allows.
func (s *spool) keep(c *spoolCall, o calls.Outcome, t *tee, local *calls.Threads) error {
	if c.finished {
		return nil
	}
	c.finished = true
	l := &calls.Logged{API: c.api, Compact: c.compact, Headers: c.headers, Time: c.at, Conversation: c.Conversation, Request: c.body, CallID: c.id,
		Threading: c.threading, Failure: o.Failure, Transient: o.Transient, Duration: o.Duration, Account: c.account}
	if t != nil && o.Refused {
		l.Status = t.status // the provider took nothing of the call in
	}
	if o.Failure == "" && t != nil {
		// The response as the client got it: without the credentials
		// the call sent upstream (maskKeys, before the tee).
		l.Status, l.Response, l.Stream = t.status, t.buf.Bytes(), t.stream != nil
		if t.over {
			l.Response, l.Failure = nil, "the response is larger than the gateway's --max-body; it reached the client but is not recorded"
		}
	} else if t != nil && t.stream != nil && !t.over {
		// A stream that failed part-way: what it delivered is the
		// record's partial output (calls.Logged.Outcome reads it), its
		// error event too, as the client got them (without the call's
		// credentials).
		l.Status, l.Response, l.Stream = t.status, t.buf.Bytes(), true
	}
	data := l.Marshal()
	s.mu.Lock()
	s.used -= c.reserved
	if s.used+int64(len(data)) > s.limit {
		if l.Failure == "" {
			l.Failure = "the spool was full: the response reached the client but was not kept"
		} // else a failed stream's: its reason stays, its partial output is not kept
		l.Response = nil
		data = l.Marshal()
	}
	s.used += int64(len(data))
	s.counted[c.id] = int64(len(data))
	s.m.spooled.Set(float64(s.used))
	s.mu.Unlock()
	name := c.id + ".call"
	if err := writeSynced(s.dir, name, data); err != nil {
		s.mu.Lock()
		s.used -= int64(len(data))
		delete(s.counted, c.id)
		if c.provisional > 0 {
			// Its provisional file stays: the call is recorded failed.
			s.used += c.provisional
			s.counted[c.id] = c.provisional
		}
		delete(s.inFlightCalls, c.id)
		s.m.spooled.Set(float64(s.used))
		s.mu.Unlock()
		// Forwarded, and its answer neither in the log nor in the spool
		// (its provisional file records it failed): said as a live call
		// the log refuses is (its response is cut).
		s.m.calls.WithLabelValues(string(c.api), "unrecorded").Inc()
		s.log.Error("gateway: call not kept in the spool; its response is cut", "conversation", c.Conversation, "call", c.id, "spool", s.dir, "err", err)
		return fmt.Errorf("keep the call in the spool: %w", err)
	}
	s.mu.Lock()
	delete(s.inFlightCalls, c.id)
	s.mu.Unlock()
	s.m.calls.WithLabelValues(string(c.api), "spooled").Inc()
	if o.Failure == "" && c.req != nil && o.Output != nil && o.Output.Error == "" {
		// Later calls of the outage continue this one: its position is
		// not known until it is recorded, so a stand-in that no real
		// position equals marks it as its conversation's latest.
		blocks := append(c.req.RequestBlocks(), o.Output.Blocks()...)
		_ = local.Record(context.Background(), c.Conversation, -int(s.seq.Add(1)), c.req.Scope, blocks, nil, calls.AnswerOf(c.api, o.Output))
	}
	return nil
}

// writeSynced writes name in dir atomically: a temporary file, synced,
// renamed, and the directory synced.
func writeSynced(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
