package chatclient

// This file holds how the client waits for a request's outcome: it watches
// the conversation, starts the watch again whenever it fails (a leader
// change, a lost connection), and reads the log now and then besides, so
// that an outcome is seen even while no watch can be made.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/worker"
)

// ErrErased is returned by Ask for a request whose conversation was
// erased while it waited: the erasure removed the request too, and
// nothing will answer it.
var ErrErased = errors.New("the conversation was erased while the request waited")

// watched is one record, or the error that ended a watch.
type watched struct {
	rec eventlog.Record
	err error
}

// follow runs one watch of conv after sequence after, until it fails or
// ctx ends; its records arrive on the returned channel, closed at the end.
func (c *Client) follow(ctx context.Context, conv string, after uint64) <-chan watched {
	ch := make(chan watched)
	go func() {
		defer close(ch)
		for rec, err := range c.log.Watch(ctx, conv, after, 0) {
			select {
			case ch <- watched{rec, err}:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// wait follows the conversation from after until req ends or ctx does.
func (c *Client) wait(ctx context.Context, r *retrier, req worker.Request, after uint64, feed *eventFeed, dead *deadLetters, noAnswer func(bool, error) error) (worker.Result, error) {
	conv, id := req.Conversation, req.RequestID
	var (
		recs        []eventlog.Record // of the current watch
		watch       <-chan watched
		stopWatch   = func() {}
		restart     <-chan time.Time
		backoff     = 100 * time.Millisecond
		poll        = time.NewTimer(c.pollEvery)
		emptied     bool // the last poll found the conversation empty
		watchFailed = func(err error) {
			r.failed(err)
			stopWatch()
			watch, recs = nil, nil
			restart = time.After(backoff)
			backoff = min(2*backoff, time.Second)
			// Without a watch, read the log sooner.
			poll.Reset(min(c.pollEvery, time.Second))
		}
	)
	defer func() { stopWatch() }()
	defer poll.Stop()
	start := func() {
		wctx, cancel := context.WithCancel(ctx)
		stopWatch, watch, restart = cancel, c.follow(wctx, conv, after), nil
	}
	start()
	for {
		select {
		case <-ctx.Done():
			return worker.Result{}, noAnswer(true, r.lastErr())
		case <-restart:
			start()
		case w, open := <-watch:
			switch {
			case !open:
				if ctx.Err() == nil {
					watchFailed(errWatchEnded)
				}
			case w.err != nil:
				watchFailed(w.err)
			default:
				r.ok()
				backoff = 100 * time.Millisecond
				if w.rec.Cause != id {
					continue
				}
				recs = append(recs, w.rec)
				feed.add(w.rec)
				if res, ended := worker.Outcome(recs); ended {
					return finished(res)
				}
			}
		case <-poll.C:
			// Read the log besides: the outcome may be stored while no
			// watch can be made (no stream leader), or the watch may sit
			// on a server that says nothing. A read that succeeds proves
			// little (a replica cut off answers from what it has), so
			// only its failures count toward moving to another server.
			recs, err := c.poll(ctx, conv, id, after)
			if err != nil && ctx.Err() == nil {
				r.failed(err)
			}
			feed.add(recs...)
			res, ended := worker.Outcome(recs)
			if ended {
				return finished(res)
			}
			if dead != nil && err == nil && len(recs) == 0 {
				if err := c.deadLettered(ctx, dead, conv, id); err != nil {
					return worker.Result{}, err
				}
			}
			if err == nil && after > 0 && len(recs) == 0 {
				// The conversation held messages when the request was
				// sent; holding none now, it was erased, and the request
				// with it: nothing will answer. Said after two polls in
				// a row, not one read.
				// A "none" is the stream's, not a replica's that lacks
				// the conversation (catching up, or a mirror's): only
				// the stream holding nothing is an erasure.
				actx, cancel := context.WithTimeout(ctx, c.attempt)
				last, lerr := c.log.LastSeq(actx, conv)
				if lerr == nil && last == 0 {
					last, lerr = c.log.CommittedLastSeq(actx, conv)
				}
				cancel()
				if lerr == nil && last == 0 {
					if emptied {
						return worker.Result{}, fmt.Errorf("%w: conversation %s was erased after request %s was sent; it will not be answered", ErrErased, conv, id)
					}
					emptied = true
				} else {
					emptied = false
				}
			}
			poll.Reset(c.pollEvery)
		}
	}
}

// poll reads the conversation after sequence after, once, for the events
// of request id; on an error it returns none.
func (c *Client) poll(ctx context.Context, conv, id string, after uint64) ([]eventlog.Record, error) {
	attempt, cancel := context.WithTimeout(ctx, c.attempt)
	defer cancel()
	var recs []eventlog.Record
	for rec, err := range c.log.EventsAfter(attempt, conv, after, 0) {
		if err != nil {
			return nil, err
		}
		if rec.Cause == id {
			recs = append(recs, rec)
		}
	}
	return recs, nil
}
