package eventlog

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// Fork is a conversation that holds a copy of another's blocks: its first
// step's conversation.started names the conversation it was forked from
// (forked_from), as `turnlog fork`, and the recording gateway when a call
// branches a conversation, write it.
type Fork struct {
	// Conversation is the fork's ID.
	Conversation string `json:"conversation"`
	// From and At are where it branched off (forked_from, forked_at): the
	// conversation Forks searched from, or one of its forks.
	From string `json:"from"`
	At   int    `json:"at"`
	// Depth is 1 for a fork of the conversation searched from, 2 for a
	// fork of one of those, and so on.
	Depth int `json:"depth"`
}

// Unchecked is a conversation whose first message Forks could not read as
// a step (a message turnlog did not write, or a damaged one): whether it
// is a fork, and of which conversation, is unknown. `turnlog replay`
// shows the message; `turnlog repair` removes it.
type Unchecked struct {
	Conversation string
	// Err says why the message is not a step (it matches
	// ErrForeignMessage or ErrCorruptMessage).
	Err error
}

// ForkSearch is what Forks found.
type ForkSearch struct {
	// Forks are the conversation's forks and theirs in turn, by depth
	// (then by ID): erasing them from the last to the first erases every
	// fork before the one it was forked from, so a search after an
	// interrupted erasure still finds those left.
	Forks []Fork
	// Unchecked are the conversations whose first message could not be
	// read, by ID. Each may be a fork of the conversation or of one of its
	// forks; its own forks, which name it, are not in Forks (a search from
	// its ID finds them).
	Unchecked []Unchecked
}

// firstReads is how many first-message reads Forks runs at once.
const firstReads = 16

// Forks finds the conversations that hold a copy of conversation's blocks
// because they were forked from it: those whose conversation.started names
// it in forked_from, and their forks in turn. It exists for privacy
// requests: Erase removes one conversation, and its forks (made by
// `turnlog fork`, or by the recording gateway when a call branched it)
// are conversations of their own that keep the blocks up to where they
// branched off, which only their own first event says. The conversation
// itself need not be stored any more: the forks of an erased conversation
// still name it.
//
// It reads what is stored: the list of conversations (as `turnlog ls`
// does) and each one's first message, one get each (firstReads at once),
// never a whole conversation. A conversation whose first message is not a
// step is reported in Unchecked, not skipped. An error reading the store
// (NATS unreachable) fails the search: nothing is known then.
//
// A conversation imported from an export of another (`turnlog import`)
// names no source and is not found: the export file holds no record of
// where it came from.
func (l *Log) Forks(ctx context.Context, conversation string) (ForkSearch, error) {
	return l.ForksOf(ctx, []string{conversation})
}

// ForksOf is Forks from several conversations at once, in one read of
// the store: the forks of any of them, and theirs in turn, none of the
// conversations themselves. Depth counts from the nearest of them. It
// exists for a search after an erasure: a fork made from a fork that is
// erased since is no longer reached from the conversation it came from,
// but still names the erased fork.
func (l *Log) ForksOf(ctx context.Context, conversations []string) (ForkSearch, error) {
	out := ForkSearch{Forks: []Fork{}}
	if len(conversations) == 0 {
		return out, errors.New("find forks: no conversation named")
	}
	for _, c := range conversations {
		if err := events.ValidateConversationID(c); err != nil {
			return out, fmt.Errorf("find forks: %w", err)
		}
	}
	conversation := conversations[0]
	if len(conversations) > 1 {
		conversation += fmt.Sprintf(" and %d more", len(conversations)-1)
	}
	roots := map[string]bool{}
	for _, c := range conversations {
		roots[c] = true
	}
	all, err := l.Conversations(ctx)
	if err != nil {
		return out, fmt.Errorf("find forks of %s: %w", conversation, err)
	}
	// The first error ends the reads still to come: the search fails.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	starts := make([]start, len(all))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, firstReads)
	for i, c := range all {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			s, err := l.firstStart(ctx, c.ID)
			switch {
			case errors.Is(err, ErrForeignMessage), errors.Is(err, ErrCorruptMessage):
				s = start{unread: err}
			case err != nil:
				mu.Lock()
				if first == nil {
					first = err
					cancel()
				}
				mu.Unlock()
			}
			s.id = c.ID
			starts[i] = s
		})
	}
	wg.Wait()
	if first != nil {
		return out, fmt.Errorf("find forks of %s: %w", conversation, first)
	}
	children := map[string][]start{}
	for _, s := range starts {
		switch {
		case roots[s.id]:
			// Not a fork of itself, whatever its first message.
		case s.unread != nil:
			out.Unchecked = append(out.Unchecked, Unchecked{Conversation: s.id, Err: s.unread})
		case s.from != "":
			children[s.from] = append(children[s.from], s)
		}
	}
	// Breadth first from the conversation; a conversation is visited once,
	// so forks that name each other (IDs reused after an erasure) end.
	seen := maps.Clone(roots)
	level := slices.Clone(conversations)
	for depth := 1; len(level) > 0; depth++ {
		var next []string
		var found []Fork
		for _, from := range level {
			for _, s := range children[from] {
				if seen[s.id] {
					continue
				}
				seen[s.id] = true
				found = append(found, Fork{Conversation: s.id, From: from, At: s.at, Depth: depth})
				next = append(next, s.id)
			}
		}
		slices.SortFunc(found, func(a, b Fork) int { return cmp.Compare(a.Conversation, b.Conversation) })
		out.Forks = append(out.Forks, found...)
		level = next
	}
	slices.SortFunc(out.Unchecked, func(a, b Unchecked) int { return cmp.Compare(a.Conversation, b.Conversation) })
	return out, nil
}

// start is what a conversation's first message says of where it came
// from: forked_from and forked_at, or why it could not be read.
type start struct {
	id     string
	from   string
	at     int
	unread error
}

// firstStart reads a conversation's first message (the first on its
// subjects, Names.EventsFilter) and returns the forked_from and forked_at
// of the conversation.started it holds (none when it holds none, or the
// conversation has no message any more). A message that is not a step is
// a *ForeignMessageError or a *CorruptMessageError.
//
// On a single server it is a direct get, when the stream itself answers
// it; a "not found" (which anyone may have sent) or a mirror's answer
// (made with mirror_direct, it may lack a new fork) is asked again of the
// stream, as committedLast does. On a cluster the stream's leader answers:
// a replica that lags might not hold a fork made a moment ago.
func (l *Log) firstStart(ctx context.Context, conversation string) (start, error) {
	names := l.Names()
	stream := names.EventsStreamOf(conversation)
	req := leaderGetRequest{Seq: 1, NextFor: names.EventsFilter(conversation)}
	var raw *jetstream.RawStreamMsg
	if !l.replicasMayLag() {
		body, err := json.Marshal(req)
		if err != nil {
			return start{}, err
		}
		m, err := l.directGet(ctx, stream, "", body)
		switch {
		case err == nil && serverValue(m.Header, jetstream.StreamHeader) == stream:
			raw = fromServer(m)
		case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
			return start{}, fmt.Errorf("read the first message of %s: %w", conversation, err)
		}
	}
	if raw == nil {
		m, err := l.leaderGet(ctx, stream, req)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return start{}, nil // erased since it was listed
		}
		if err != nil {
			return start{}, fmt.Errorf("read the first message of %s: %w", conversation, err)
		}
		raw = m
	}
	evs, err := readStep(conversation, raw)
	if err != nil {
		return start{}, err
	}
	for _, e := range evs {
		if p, ok := e.Payload.(events.ConversationStarted); ok && p.ForkedFrom != "" {
			return start{from: p.ForkedFrom, at: p.ForkedAt}, nil
		}
	}
	return start{}, nil
}
