package replay

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
)

// A count of the messages on conversations' subjects that are not their
// steps, over the whole log: what `turnlog status --scan` reports. Nothing
// on the server counts them (a message is foreign by its headers, and
// quarantined when its data does not decode as a step of the
// conversation), so the count reads every stored message. It folds
// nothing and checks nothing: a read, not a replay.

// NotStepsSource is what ScanNotSteps reads: the conversations the log
// holds and each one's messages, the foreign ones named. *eventlog.Log
// implements it.
type NotStepsSource interface {
	ForeignSource
	Conversations(ctx context.Context) ([]eventlog.Conversation, error)
}

// NotSteps counts one conversation's messages that are not its steps.
type NotSteps struct {
	Conversation string `json:"conversation"`
	// Foreign counts the messages turnlog did not write (see
	// eventlog.ErrForeignMessage): every read ignores them.
	Foreign int `json:"foreign"`
	// Quarantined counts those with turnlog's headers that are not steps
	// of the conversation (see eventlog.ErrCorruptMessage): a request to
	// it fails until `turnlog repair` removes them.
	Quarantined int `json:"quarantined"`
	// InvalidID, when set, says why the subject's conversation ID is not
	// one turnlog writes: every message on it is counted foreign, and no
	// turnlog command reads it (a NATS client does).
	InvalidID string `json:"invalid_id,omitempty"`
}

// NotStepsScan is what ScanNotSteps found.
type NotStepsScan struct {
	// Conversations counts the conversations read.
	Conversations int `json:"conversations"`
	// Foreign and Quarantined are the totals of In.
	Foreign     int `json:"foreign"`
	Quarantined int `json:"quarantined"`
	// In lists the conversations that hold such messages, by ID.
	In []NotSteps `json:"in"`
}

// scanReads is how many conversations ScanNotSteps reads at once.
const scanReads = 8

// ScanNotSteps reads every message of every conversation src holds and
// counts those that are not steps: its cost is a read of the whole event
// streams, so a command offers it on request, never by default.
func ScanNotSteps(ctx context.Context, src NotStepsSource) (*NotStepsScan, error) {
	all, err := src.Conversations(ctx)
	if err != nil {
		return nil, err
	}
	cs := make([]Conversation, len(all))
	invalid := make(map[string]string)
	for i, c := range all {
		cs[i] = Conversation{ID: c.ID, Messages: c.Messages}
		if err := events.ValidateConversationID(c.ID); err != nil {
			invalid[c.ID] = err.Error()
		}
	}
	err = forEach(ctx, cs, scanReads, func(ctx context.Context, c *Conversation) error {
		if _, bad := invalid[c.ID]; bad {
			c.Foreign = int(c.Messages) // turnlog never writes there
			return nil
		}
		for _, err := range src.EventsWithForeign(ctx, c.ID) {
			switch {
			case errors.Is(err, eventlog.ErrForeignMessage):
				c.Foreign++
			case errors.Is(err, eventlog.ErrCorruptMessage):
				c.Quarantined++
			case err != nil:
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	scan := &NotStepsScan{Conversations: len(cs), In: []NotSteps{}}
	for _, c := range cs {
		if c.Foreign == 0 && c.Quarantined == 0 {
			continue
		}
		scan.Foreign += c.Foreign
		scan.Quarantined += c.Quarantined
		scan.In = append(scan.In, NotSteps{Conversation: c.ID, Foreign: c.Foreign, Quarantined: c.Quarantined, InvalidID: invalid[c.ID]})
	}
	slices.SortFunc(scan.In, func(a, b NotSteps) int { return strings.Compare(a.Conversation, b.Conversation) })
	return scan, nil
}
