package gateway

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// LineError is a line of a calls file that cannot be imported.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// LoggedLine is one call of a calls file, with its line number.
type LoggedLine struct {
	Line int
	Call *calls.Logged
	// unread, when set, is why the call is recorded by its hash alone
	// (the spool's: see spool.record).
	unread string
}

// ReadCalls reads a file of logged calls (import --calls) and checks every
// line before anything is recorded: each must be a logged call whose
// request and response are of its API's shape. It returns every bad line
// (errors.Join of *LineError), or the calls in the order of their times
// (stable: equal times keep the file's order), the order they are
// recorded and threaded in. Blank lines are skipped.
func ReadCalls(r io.Reader, maxLine int) ([]LoggedLine, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), maxLine)
	var out []LoggedLine
	var bad []error
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		l, err := checkLogged(bytes.Clone(line))
		if err != nil {
			bad = append(bad, &LineError{Line: n, Err: err})
			continue
		}
		out = append(out, LoggedLine{Line: n, Call: l})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			err = fmt.Errorf("a line is longer than %d bytes (--max-body)", maxLine)
		}
		return nil, errors.Join(append(bad, fmt.Errorf("after line %d: %w", len(out)+len(bad), err))...)
	}
	if len(bad) > 0 {
		return nil, errors.Join(bad...)
	}
	slices.SortStableFunc(out, func(a, b LoggedLine) int { return a.Call.Time.Compare(b.Call.Time) })
	return out, nil
}

// checkLogged reads a line and refuses what the gateway would record only
// as unparsed or failed for want of a readable body: in a file, that is a
// mistake (a wrong "api", a truncated body), not what the call was.
func checkLogged(line []byte) (*calls.Logged, error) {
	l, err := calls.ParseLogged(line)
	if err != nil {
		return nil, err
	}
	if _, err := calls.ParseRequest(l.API, l.Request); err != nil {
		return nil, fmt.Errorf(`"request" is not a %s request: %w`, l.API, err)
	}
	if l.Failure == "" && l.Status < 300 {
		if o := l.Outcome(); o.Output == nil {
			return nil, fmt.Errorf(`"response" is not a %s response: %s`, l.API, o.Failure)
		}
	}
	return l, nil
}

// Imported is where an imported call was recorded.
type Imported struct {
	Line         int    `json:"line"`
	Conversation string `json:"conversation"`
	Threading    string `json:"threading,omitempty"`
	// Status is "recorded", or "unchanged" for a call an earlier import
	// recorded (in Conversation), which is not recorded again.
	Status string `json:"status"`
	// Lacks, for a call recorded, says what of it the log does not hold
	// and why: its input, recorded by its hash alone (unparsed: its new
	// content too large to store), or its answer (too large to store,
	// the call recorded as failed). Empty when the call is whole.
	Lacks string `json:"lacks,omitempty"`
}

// Statuses of an Imported call.
const (
	StatusRecorded  = "recorded"
	StatusUnchanged = "unchanged"
)

// Import records calls in order through r, as the gateway records live
// calls, and returns where each went. It stops at the first call the log
// refuses (the calls before it are recorded). Importing a call again
// records nothing: the threading index notes each call imported by a hash
// of its line's content (kept on its inference.started, so that erasing
// its conversation forgets it too).
func (r *Recorder) Import(ctx context.Context, lines []LoggedLine) ([]Imported, error) {
	return r.recordLogged(ctx, lines, true)
}

// recordLogged records logged calls: a file's (imported, noted as such)
// or the spool's (calls the gateway saw, recorded late).
func (r *Recorder) recordLogged(ctx context.Context, lines []LoggedLine, imported bool) ([]Imported, error) {
	out := make([]Imported, 0, len(lines))
	for _, ln := range lines {
		l := ln.Call
		key := ""
		if imported {
			key = importKey(l)
			conv, pending, done, err := r.threads.Imported(ctx, key)
			if err != nil {
				return out, &LineError{Line: ln.Line, Err: err}
			}
			if done && pending {
				// An earlier import stopped while it recorded this call.
				res, found, err := r.resumeImport(ctx, conv, key, l)
				if err != nil {
					return out, &LineError{Line: ln.Line, Err: err}
				}
				if found {
					res.Line = ln.Line
					out = append(out, res)
					continue
				}
			} else if done {
				out = append(out, Imported{Line: ln.Line, Conversation: conv, Status: StatusUnchanged})
				continue
			}
		}
		if imported && l.Conversation != "" {
			if err := r.notBefore(ctx, l); err != nil {
				return out, &LineError{Line: ln.Line, Err: err}
			}
		}
		p, err := r.Begin(ctx, Call{API: l.API, Body: l.Request, Conversation: l.Conversation, Time: l.Time, ID: l.CallID, Threading: l.Threading, Import: key, Compact: l.Compact, Headers: l.Headers, Unread: ln.unread})
		if err != nil {
			return out, &LineError{Line: ln.Line, Err: err}
		}
		if err := r.Finish(ctx, p, l.Outcome()); err != nil {
			return out, &LineError{Line: ln.Line, Err: err}
		}
		if imported {
			// Noted pending before its input was stored (recordInput),
			// noted done now: an import that stops in between finds it
			// at the next (resumeImport).
			if err := r.threads.RecordImported(ctx, key, p.Conversation()); err != nil {
				return out, &LineError{Line: ln.Line, Err: err}
			}
		}
		out = append(out, Imported{Line: ln.Line, Conversation: p.Conversation(), Threading: p.Threading(), Status: StatusRecorded, Lacks: p.lacks})
	}
	return out, nil
}

// notBefore refuses logged call l, to be imported into the conversation
// it names, when that conversation's last event is later than the call:
// recorded after it, at its own time, the call would stand after calls
// made later, the conversation's times running backwards (and its last
// activity the old call's).
func (r *Recorder) notBefore(ctx context.Context, l *calls.Logged) error {
	tl, ok := r.log.(tails)
	if !ok {
		return nil
	}
	tail, err := tl.Last(ctx, l.Conversation)
	if err != nil {
		return err
	}
	for _, e := range tail.Events {
		if e.Time.After(l.Time) {
			return fmt.Errorf("the call's time %s is before the last event of conversation %s (%s): recorded after it, it would stand after calls made later; import a conversation's calls in time order, or this one into a conversation of its own (leave \"conversation\" out)",
				l.Time.UTC().Format(time.RFC3339), l.Conversation, e.Time.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// importKey names an imported call by what its line says of it (a hash):
// the same call imported again has the same key.
func importKey(l *calls.Logged) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(l.API), []byte(l.Time.UTC().Format(time.RFC3339Nano)), []byte(l.Conversation),
		l.Request, l.Response, []byte(strconv.Itoa(l.Status)), []byte(l.Failure), []byte(l.CallID)} {
		h.Write([]byte(strconv.Itoa(len(part)) + ":"))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Record records a logged call (import --calls, the spool) at its logged
// time, threaded and checked as a live call is. It returns the call's
// conversation.
func (r *Recorder) Record(ctx context.Context, l *calls.Logged) (string, error) {
	res, err := r.recordLogged(ctx, []LoggedLine{{Call: l}}, false)
	if err != nil {
		return "", errors.Unwrap(err)
	}
	return res[0].Conversation, nil
}

// eventsLog is the part of *eventlog.Log that tells whether a call is
// recorded.
type eventsLog interface {
	Events(ctx context.Context, conversation string) iter.Seq2[eventlog.Record, error]
}

// startedOf returns call id's inference.started in conversation conv,
// read from the log; ok is false when it holds none.
func (r *Recorder) startedOf(ctx context.Context, conv, id string) (_ events.InferenceStarted, ok bool, _ error) {
	el, ok := r.log.(eventsLog)
	if !ok {
		return events.InferenceStarted{}, false, nil
	}
	for rec, err := range el.Events(ctx, conv) {
		if err != nil {
			return events.InferenceStarted{}, false, err
		}
		if s, ok := rec.Event.Payload.(events.InferenceStarted); ok && s.InferenceID == id {
			return s, true, nil
		}
	}
	return events.InferenceStarted{}, false, nil
}
