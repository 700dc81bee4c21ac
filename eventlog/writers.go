package eventlog

// This file holds who wrote a step. Each writing role appends to its own
// subject under the conversation, <prefix>.events.<conversation>.<role>
// (Names.EventsRoleSubject), and nats-server lets each role's credential
// publish to its own token only (natsauth), so the subject a step is
// stored on says which role wrote it, and no writer can say otherwise.
// The expected-sequence check of an append covers all of the
// conversation's role subjects (Nats-Expected-Last-Subject-Sequence-Subject
// with <conversation>.*), so the conversation is still one ordered log.
//
// Steps stored before roles had subjects are on <prefix>.events.<conversation>
// (legacy): they read as before, with no writer (unattributed). All of a
// conversation's legacy steps come before its first role step: turnlog
// writes legacy subjects no more, and only the admin may.

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// writerOf is the role of the writer of a message stored on subject, ""
// for a legacy subject.
func (l *Log) writerOf(subject string) string {
	_, role, _ := l.Names().SplitEventsSubject(subject)
	return role
}

// WriterRole is the role this log appends as (WithWriterRole).
func (l *Log) WriterRole() string { return l.opts.writerRole }

// lastOn is the last message on subject (a wildcard or not) of the
// conversation's stream, jetstream.ErrMsgNotFound when there is none.
func (l *Log) lastOn(ctx context.Context, conversation, subject string) (*jetstream.RawStreamMsg, error) {
	if l.ready.Load() {
		return l.streamFor(conversation).GetLastMsgForSubject(ctx, subject)
	}
	stream, _, err := l.eventsOf(ctx, conversation)
	if err != nil {
		return nil, err
	}
	return l.directLast(ctx, stream, subject)
}

// legacyLast is the conversation's last legacy message, nil when it has
// none. That it has none is remembered: nothing writes legacy subjects
// any more, so a conversation without legacy messages never gets one.
func (l *Log) legacyLast(ctx context.Context, conversation string) (*jetstream.RawStreamMsg, error) {
	if _, none := l.noLegacy.Load(conversation); none {
		return nil, nil
	}
	_, legacy, err := l.eventsOf(ctx, conversation)
	if err != nil {
		return nil, err
	}
	m, err := l.lastOn(ctx, conversation, legacy)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		l.noLegacy.Store(conversation, true)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return m, nil
}

// forgetLegacy drops what legacyLast remembers of a conversation (after an
// erase or a repair, which write it anew).
func (l *Log) forgetLegacy(conversation string) { l.noLegacy.Delete(conversation) }

// appendFilter is the subject whose last message the server checks an
// append's expected sequence against: the conversation's role subjects,
// or, for the first role step after legacy ones, the legacy subject (no
// wildcard matches both). It refuses, as a conflict, an expected sequence
// that cannot be the conversation's last: below its last legacy message,
// or that message when a role step already followed it.
func (l *Log) appendFilter(ctx context.Context, conversation string, expected uint64) (string, error) {
	names := l.Names()
	wildcard := names.EventsConversationWildcard(conversation)
	legacy, err := l.legacyLast(ctx, conversation)
	if err != nil {
		return "", err
	}
	if legacy == nil || expected > legacy.Sequence {
		return wildcard, nil
	}
	last, err := l.lastOn(ctx, conversation, wildcard)
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		last = legacy
	case err != nil:
		return "", err
	}
	if expected != last.Sequence {
		return "", &ConflictError{Conversation: conversation, Expected: expected, Actual: last.Sequence}
	}
	// The step after the last legacy one. Between the lookup above and
	// the append, another writer's first role step may land: both would
	// follow the same legacy message. The links show it (two messages
	// naming the same previous one); it can happen once per conversation,
	// at its first append after the upgrade.
	return legacy.Subject, nil
}

// sameConversation reports whether subject is one of the conversation's
// events subjects (legacy or a role's).
func (l *Log) sameConversation(conversation, subject string) bool {
	c, _, ok := l.Names().SplitEventsSubject(subject)
	return ok && c == conversation
}
