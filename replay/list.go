package replay

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// Conversation is one stored conversation as `turnlog ls` and
// GET /conversations show it: enough to pick one to replay.
type Conversation struct {
	ID string `json:"id"`
	// Messages counts its stored steps (one step may carry several events).
	Messages uint64 `json:"messages"`
	// LastActivity is when its last event was created.
	LastActivity time.Time `json:"last_activity"`
	// LastSeq is the stream sequence of its last message, as Newest read
	// it: any change to the conversation moves it, so what was read of
	// it can be remembered against it (Descriptions).
	LastSeq uint64 `json:"-"`
	// Events, ModelCalls (inference.started events) and LastRequestFailed
	// (its latest request ended in request.failed, or, for a conversation
	// the recording gateway records, its latest call failed: an upstream
	// error, a cut stream) are read from its
	// history by Describe; they are zero until then. Their keys are
	// always in the JSON (`turnlog ls --json`), zero and false included,
	// so that a script can read them without checking for them.
	Events            int  `json:"events"`
	ModelCalls        int  `json:"model_calls"`
	LastRequestFailed bool `json:"last_request_failed"`
	// LastFailure is the reason of that failed request or call.
	LastFailure string `json:"last_failure,omitempty"`
	// LastRequestOpen: the latest call the recording gateway recorded in
	// it has no outcome: in progress, or its gateway stopped before the
	// answer was recorded (the app got none; see docs/gateway.md, Calls
	// left open). Always in the JSON.
	LastRequestOpen bool `json:"last_request_open"`
	// WaitingFor, for such an open call that is a background response
	// still running (see calls.PlanBackgroundOutcome), is that response's
	// ID: its end is recorded when the app fetches it through the gateway.
	WaitingFor string `json:"waiting_for,omitempty"`
	// Quarantined counts the messages on its subject that are not its
	// steps (see eventlog.ErrCorruptMessage): `turnlog repair` removes
	// them. Always in the JSON, as the counts above.
	Quarantined int `json:"quarantined"`
	// Foreign counts the messages on its subjects that turnlog did not
	// write (see eventlog.ErrForeignMessage), which every read ignores,
	// when its source names them (ForeignSource): `turnlog repair`
	// removes them too. Always in the JSON, as the counts above.
	Foreign int `json:"foreign"`
	// Findings counts the rules its model inputs broke (see Check), read
	// by Describe in the same pass over the history: `turnlog replay
	// --check` lists them. Always in the JSON, as the counts above.
	Findings int `json:"findings"`
	// FirstMessage is the text of its first user message (a fork's, of
	// the blocks it began with), at most firstMessageRunes runes: what
	// tells apart conversations named by ULIDs alone (an app's through
	// the gateway, chats begun without an ID); a block without text (a
	// file or image sent before the text) is passed over. "" when it has
	// none.
	// Always in the JSON.
	FirstMessage string `json:"first_message"`
	// ForkedFrom is the conversation it was forked from ("" for none).
	ForkedFrom string `json:"forked_from,omitempty"`
}

// firstMessageRunes bounds Conversation.FirstMessage: a list shows the
// beginning of a message, not the whole of a pasted document.
const firstMessageRunes = 200

// firstUserText returns the text of the first user block of blocks.
func firstUserText(blocks []events.Block) (string, bool) {
	for _, b := range blocks {
		if b.Kind == events.KindUser && b.Text != "" {
			return b.Text, true
		}
	}
	return "", false
}

// shorten returns s cut to at most n runes.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	if r := []rune(s); len(r) > n {
		return string(r[:n])
	}
	return s
}

// Lister is what Newest reads: the conversations the log holds, and one
// conversation's last message. *eventlog.Log implements it.
type Lister interface {
	Conversations(ctx context.Context) ([]eventlog.Conversation, error)
	Last(ctx context.Context, conversation string) (eventlog.Tail, error)
}

// lastGets is how many last-message reads Newest runs at once: listing
// costs one direct get per matching conversation, for its last time.
const lastGets = 16

// Newest lists the conversations whose ID match accepts (nil: all),
// newest first (ties by ID), with their last activity. A conversation
// erased while it is being listed is left out.
func Newest(ctx context.Context, l Lister, match func(id string) bool) ([]Conversation, error) {
	all, err := l.Conversations(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Conversation, 0, len(all))
	for _, c := range all {
		if match == nil || match(c.ID) {
			out = append(out, Conversation{ID: c.ID, Messages: c.Messages})
		}
	}
	if err := forEach(ctx, out, lastGets, func(ctx context.Context, c *Conversation) error {
		tail, err := l.Last(ctx, c.ID)
		c.LastSeq = tail.Seq
		if errors.Is(err, eventlog.ErrCorruptMessage) {
			// Listed all the same, by when its last message was stored;
			// its timeline shows that message as quarantined.
			c.LastActivity = tail.Stored
			return nil
		}
		if n := len(tail.Events); err == nil && n > 0 {
			c.LastActivity = tail.Events[n-1].Time
		}
		return err
	}); err != nil {
		return nil, err
	}
	out = slices.DeleteFunc(out, func(c Conversation) bool { return c.LastActivity.IsZero() })
	slices.SortFunc(out, func(a, b Conversation) int {
		return cmp.Or(b.LastActivity.Compare(a.LastActivity), strings.Compare(a.ID, b.ID))
	})
	return out, nil
}

// Describe reads c's history and fills in its event count, model calls,
// whether its latest request failed and how many findings Check reports.
// It costs a read of the whole conversation, and a fold of it for the
// check, so callers describe only what they show.
func Describe(ctx context.Context, src Source, c *Conversation) error {
	c.Events, c.ModelCalls, c.LastRequestFailed, c.LastFailure, c.Quarantined, c.Foreign, c.Findings = 0, 0, false, "", 0, 0, 0
	c.LastRequestOpen, c.FirstMessage, c.ForkedFrom, c.WaitingFor = false, "", "", ""
	firstFound := false
	chk, checking := NewChecker(), true
	// An app's call through the gateway is its own request: its closing
	// event says how it ended. (A worker's model calls are steps of a
	// request, which request.completed or request.failed ends.)
	lastGatewayCall := ""
	for rec, err := range eventsOf(ctx, src, c.ID, true) {
		if errors.Is(err, eventlog.ErrForeignMessage) {
			c.Foreign++
			continue
		}
		if errors.Is(err, eventlog.ErrCorruptMessage) {
			c.Quarantined++
			continue
		}
		if err != nil {
			return err
		}
		c.Events++
		c.LastActivity = rec.Time
		if checking {
			// An event the fold rejects ends the check (replay --verify
			// names it), not the listing.
			fs, err := chk.Feed(rec.Event)
			checking = err == nil
			c.Findings += len(fs)
		}
		switch p := rec.Payload.(type) {
		case events.ConversationStarted:
			c.ForkedFrom = p.ForkedFrom
			if !firstFound {
				var text string
				if text, firstFound = firstUserText(p.Blocks); firstFound {
					c.FirstMessage = shorten(text, firstMessageRunes)
				}
			}
		case events.UserAppended:
			// A message's file or image before its text is a block of
			// its own, without text: the first text tells it apart.
			if !firstFound && p.Text != "" {
				c.FirstMessage, firstFound = shorten(p.Text, firstMessageRunes), true
			}
		case events.DataSet:
			if lastGatewayCall != "" {
				if id, ok := p.Values[calls.BackgroundKey(lastGatewayCall)]; ok {
					c.WaitingFor = id
				}
				if slices.Contains(p.Unset, calls.BackgroundKey(lastGatewayCall)) {
					c.WaitingFor = ""
				}
			}
		case events.InferenceStarted:
			c.ModelCalls++
			if p.Gateway != nil {
				lastGatewayCall = p.InferenceID
				c.LastRequestFailed, c.LastFailure, c.LastRequestOpen, c.WaitingFor = false, "", true, ""
			}
		case events.InferenceFinished:
			if p.InferenceID == lastGatewayCall {
				c.LastRequestFailed, c.LastFailure, c.LastRequestOpen = false, "", false
			}
		case events.InferenceFailed:
			if p.InferenceID == lastGatewayCall {
				c.LastRequestFailed, c.LastFailure, c.LastRequestOpen = true, p.Error, false
			}
		case events.RequestCompleted:
			c.LastRequestFailed, c.LastFailure = false, ""
		case events.RequestFailed:
			c.LastRequestFailed, c.LastFailure = true, p.Reason
		}
	}
	return nil
}

// DescribeAll describes each conversation of cs, a few at a time.
func DescribeAll(ctx context.Context, src Source, cs []Conversation) error {
	return forEach(ctx, cs, 4, func(ctx context.Context, c *Conversation) error { return Describe(ctx, src, c) })
}

// forEach runs f on every element of cs, at most n at once, and returns
// the first error (which cancels the rest).
func forEach(ctx context.Context, cs []Conversation, n int, f func(context.Context, *Conversation) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, n)
	for i := range cs {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := f(ctx, &cs[i]); err != nil {
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}
