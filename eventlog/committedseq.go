package eventlog

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/turnlog/turnlog/events"
)

// CommittedLastSeq is the stream sequence of a conversation's last message
// as its stream holds it (its leader's answer on a cluster; 0 when it
// holds none), where LastSeq's direct get may be answered by a replica
// that lacks the conversation's messages (see leaderread.go). It is for a
// decision that a "none" must not be a replica's: that the conversation
// was erased.
func (l *Log) CommittedLastSeq(ctx context.Context, conversation string) (uint64, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return 0, err
	}
	m, err := l.committedLast(ctx, conversation)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("last sequence of %s: %w", conversation, err)
	}
	return m.Sequence, nil
}
