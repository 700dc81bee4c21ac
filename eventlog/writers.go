package eventlog

// This file holds who wrote a step. Each writing role appends to subjects
// of its own, <prefix>.events-<role>.<conversation>
// (Names.EventsRoleSubject), and nats-server lets each role's credential
// publish to its own subjects only (natsauth), so the subject a step is
// stored on says which role wrote it, and no writer can say otherwise.
//
// The expected-sequence check of an append covers every subject of the
// conversation, <prefix>.*.<conversation> (Names.EventsFilter, with the
// header Nats-Expected-Last-Subject-Sequence-Subject, nats-server 2.11+):
// the conversation stays one ordered log whoever writes it, and the same
// filter, the same string for every writer, takes in the steps stored on
// <prefix>.events.<conversation> before roles had subjects (legacy,
// unattributed). So an append costs what it did (one message, no lookup),
// and a conversation written before the upgrade goes on from its legacy
// steps with the same check as any other.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// writerOf is the role of the writer of a message stored on subject with
// header h, "" for a legacy subject. A message the admin stored again in a
// repair (on the admin's subject, as only the admin may) keeps the writer
// of the original, which the repair records in HeaderRestoredWriter: the
// header counts on the admin's subject only, where no other role can put
// it.
func (l *Log) writerOf(subject string, h nats.Header) string {
	_, role, _ := l.Names().SplitEventsSubject(subject)
	if role == "admin" && h.Get(HeaderRestoredFrom) != "" {
		if w, ok := h[HeaderRestoredWriter]; ok && len(w) == 1 {
			if w[0] == restoredUnattributed {
				return ""
			}
			if slices.Contains(WriterRoles, w[0]) {
				return w[0]
			}
		}
	}
	return role
}

// HeaderRestoredWriter is, on a message a repair stored again, the role
// that wrote the original (restoredUnattributed for a legacy one).
const HeaderRestoredWriter = "Turnlog-Restored-Writer"

// restoredUnattributed is HeaderRestoredWriter's value for a restored
// message whose original was stored before roles had subjects.
const restoredUnattributed = "none"

// WriterRole is the role this log appends as (WithWriterRole).
func (l *Log) WriterRole() string { return l.opts.writerRole }

// appendSubjects are an append's subject (Names.EventsRoleSubject of this
// log's writer) and the filter of its expected-sequence check
// (Names.EventsFilter), built from prefixes made once: an append's hot
// path, where going through Names cost more than the server's check.
func (l *Log) appendSubjects(conversation string) (subject, filter string) {
	tail := "." + conversation
	if n := int(l.eventShards.Load()); n > 1 {
		tail = "." + strconv.Itoa(ShardOf(conversation, n)) + tail
	}
	return l.rolePrefix + tail, l.filterPrefix + tail
}

// roleInboxPrefix is the start of the reply subjects of a connection made
// with a role's credential (natsauth.InboxPrefix: "_INBOX_<role>").
const roleInboxPrefix = "_INBOX_"

// setWriterRole settles the role this log writes as: WithWriterRole's, or
// else the role whose credential the connection was made with, as its
// inbox prefix names it (natsauth gives each role its own), or else
// DefaultWriterRole. So a program that connects with worker.nk and opens a
// log writes as the worker, where writing as the admin would have every
// append refused.
func (l *Log) setWriterRole() {
	if l.opts.writerRole != "" {
		return
	}
	l.opts.writerRole = DefaultWriterRole
	if l.nc == nil {
		return
	}
	if role, ok := strings.CutPrefix(l.nc.Opts.InboxPrefix, roleInboxPrefix); ok && validWriterRole(role) == nil {
		l.opts.writerRole = role
	}
}

// setWriterPrefixes settles the writer role and makes the prefixes
// appendSubjects uses.
func (l *Log) setWriterPrefixes() {
	l.setWriterRole()
	l.rolePrefix = l.names.Prefix + "." + eventsToken(l.opts.writerRole)
	l.filterPrefix = l.names.Prefix + ".*"
}

// sameConversation reports whether subject is one of the conversation's
// events subjects (legacy or a role's).
func (l *Log) sameConversation(conversation, subject string) bool {
	c, _, ok := l.Names().SplitEventsSubject(subject)
	return ok && c == conversation
}

// validWriterRole checks a role given to WithWriterRole.
func validWriterRole(role string) error {
	if !slices.Contains(WriterRoles, role) {
		return fmt.Errorf("writer role %q: use one of %v (a client writes no events)", role, WriterRoles)
	}
	return nil
}

// serverTooOld reports whether a nats-server of version v (as the
// connection reports it, "2.15.2") lacks
// Nats-Expected-Last-Subject-Sequence-Subject (2.11+): it would ignore the
// header and check an append against its writer's subject alone, so a
// conversation written by two roles, or begun before roles had subjects,
// could not be appended to. A version that does not parse is taken as
// new enough.
func serverTooOld(v string) bool {
	var major, minor int
	if n, _ := fmt.Sscanf(v, "%d.%d", &major, &minor); n != 2 {
		return false
	}
	return major < 2 || (major == 2 && minor < 11)
}

// checkServer refuses appends through a server too old for them (see
// serverTooOld), once per log.
func (l *Log) checkServer() error {
	if l.serverOK.Load() {
		return nil
	}
	if v := l.nc.ConnectedServerVersion(); serverTooOld(v) {
		return fmt.Errorf("nats-server %s is too old: turnlog needs 2.11 or newer, whose Nats-Expected-Last-Subject-Sequence-Subject keeps a conversation one ordered log across its writers' subjects; upgrade the servers", v)
	}
	l.serverOK.Store(true)
	return nil
}
