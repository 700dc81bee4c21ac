package eventlog

import (
	"fmt"
	"strings"

	"github.com/nats-io/nats.go"
)

// NATS checks a requester's right to publish to a request's subject, never
// to the reply subject it names: a client allowed to ask the workers who
// they are could name a conversation's events subject, or a bucket's key,
// as the reply, and the worker's answer would be stored there, under the
// worker's rights. turnlog's responders answer inboxes only: every role's
// replies come on an inbox subject (nats.go's "_INBOX." and the roles'
// "_INBOX_<role>."), which no stream of turnlog's stores.

// inboxPrefix begins every subject turnlog's clients take replies on.
const inboxPrefix = "_INBOX"

// ErrReplyNotInbox is returned by Respond for a request whose reply
// subject is not an inbox: it is not answered.
var ErrReplyNotInbox = fmt.Errorf("the reply subject is not an inbox (%s...): a turnlog responder answers inboxes only, never a subject a stream may store", inboxPrefix)

// Respond answers request m with data when m's reply subject is an inbox,
// and refuses (ErrReplyNotInbox) otherwise. Every responder of turnlog's
// answers through it.
func Respond(m *nats.Msg, data []byte) error {
	if !strings.HasPrefix(m.Reply, inboxPrefix) {
		return fmt.Errorf("request on %s, reply %q: %w", m.Subject, m.Reply, ErrReplyNotInbox)
	}
	return m.Respond(data)
}
