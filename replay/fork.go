package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// ActorFork is the actor of the conversation.started a fork records.
const ActorFork = "fork"

// ForkStore is what Fork needs of a log; *eventlog.Log implements it.
type ForkStore interface {
	Load(ctx context.Context, conversation string) (*projector.Turn, error)
	LoadAt(ctx context.Context, conversation string, n int) (*projector.Turn, error)
	Append(ctx context.Context, conversation string, expectedSeq uint64, evs ...events.Event) (uint64, error)
}

// Forked says what Fork created.
type Forked struct {
	// Conversation is the new conversation's ID.
	Conversation string `json:"conversation"`
	// From and At are where it branched off: <From>@<At>.
	From string `json:"from"`
	At   int    `json:"at"`
	// Blocks counts the blocks it starts with.
	Blocks int `json:"blocks"`
}

// Fork starts a new conversation from another one's Turn after its n-th
// event (n < 1: its latest), for what-if debugging. The new conversation's
// first and only event is conversation.started with ForkedFrom, ForkedAt
// and the Turn's blocks and data, so its log is complete on its own and
// still says where it came from. to "" generates an ID (a ULID). A to that
// already has events is refused with ErrExists.
func Fork(ctx context.Context, store ForkStore, from string, n int, to string) (*Forked, error) {
	if err := events.ValidateConversationID(from); err != nil {
		return nil, fmt.Errorf("fork: %w", err)
	}
	if to == "" {
		to = ulid.Make().String()
	}
	if err := events.ValidateConversationID(to); err != nil {
		return nil, fmt.Errorf("fork: new conversation: %w", err)
	}
	if to == from {
		return nil, fmt.Errorf("fork: the new conversation must differ from %s; give another ID or none", from)
	}
	var turn *projector.Turn
	var err error
	if n < 1 {
		turn, err = store.Load(ctx, from)
	} else {
		turn, err = store.LoadAt(ctx, from, n)
	}
	if err != nil {
		return nil, fmt.Errorf("fork %s: %w", from, err)
	}
	if turn.Events == 0 {
		return nil, fmt.Errorf("fork %s: %w", from, ErrNoEvents)
	}
	blocks := make([]events.Block, len(turn.Blocks))
	for i, b := range turn.Blocks {
		blocks[i] = b.Clone()
	}
	e := events.New(to, "fork-"+ulid.Make().String(), 0, ActorFork, events.ConversationStarted{
		ForkedFrom: from, ForkedAt: turn.Events, Blocks: blocks, Data: cloneMeta(turn.Data)})
	if _, err := store.Append(ctx, to, 0, e); err != nil {
		if errors.Is(err, eventlog.ErrConflict) {
			return nil, fmt.Errorf("fork %s: %w: %s has events; choose another ID (or none to get a fresh one)", from, ErrExists, to)
		}
		return nil, fmt.Errorf("fork %s into %s: %w", from, to, err)
	}
	return &Forked{Conversation: to, From: from, At: turn.Events, Blocks: len(blocks)}, nil
}
