package chatclient

// This file holds what Ask tells its caller about a request's events as
// they are stored (OnEvent): a chat client shows tool calls with them
// while the request runs, as the console does.

import "github.com/turnlog/turnlog/eventlog"

// AskOption changes one Ask.
type AskOption func(*askSettings)

type askSettings struct {
	onEvent func(eventlog.Record)
}

// OnEvent has Ask call fn with each stored event of the request, in the
// log's order and once each, as the wait sees them: its watch and its
// reads of the log may both see an event, and a watch started again sees
// earlier ones again. fn runs on Ask's goroutine, never after Ask returned.
func OnEvent(fn func(eventlog.Record)) AskOption {
	return func(s *askSettings) { s.onEvent = fn }
}

// eventFeed passes a request's events on to OnEvent's fn once each: by
// position in the conversation, which only grows.
type eventFeed struct {
	fn   func(eventlog.Record)
	last int
}

func (f *eventFeed) add(recs ...eventlog.Record) {
	if f.fn == nil {
		return
	}
	for _, rec := range recs {
		if rec.Pos > f.last {
			f.last = rec.Pos
			f.fn(rec)
		}
	}
}
