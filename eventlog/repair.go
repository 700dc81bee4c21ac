package eventlog

// This file holds the removal of corrupt messages (see ErrCorruptMessage)
// from a conversation's subject. The events stream denies deleting single
// messages (events are never edited, and a stream cannot be made to allow
// deletes again), and a purge removes only a subject's oldest messages.
// So a repair stores every message it keeps again, byte for byte and in
// order, after the conversation's last message; appends an audit step of
// message.removed events (what each removed message was); and purges the
// subject below the first message it stored. Positions (<conv>@<n>) stay
// as they were, since a corrupt message holds no events; stream sequences
// change.
//
// A repair interrupted half way is finished or redone by the next one: the
// messages it stored carry HeaderRepair, and its audit step HeaderPurgeBelow.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"iter"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
	"github.com/turnlog/turnlog/events"
)

// Headers a repair writes on the messages it stores.
const (
	// HeaderRepair names the repair (its cause) that stored the message.
	HeaderRepair = "Turnlog-Repair"
	// HeaderRestoredFrom is the sequence a message stored again had.
	HeaderRestoredFrom = "Turnlog-Restored-From"
	// HeaderPurgeBelow, on a repair's audit step, is the sequence below
	// which the conversation's messages were superseded by the repair.
	HeaderPurgeBelow = "Turnlog-Repair-Purge-Below"
)

// CorruptMessage is a message of a conversation's subject that is not one
// of its steps, as a repair plan describes it.
type CorruptMessage struct {
	Seq     uint64            `json:"seq"`
	Size    int               `json:"size"`
	SHA256  string            `json:"sha256"`
	Headers map[string]string `json:"headers,omitempty"`
	Reason  string            `json:"reason"`
}

// RepairPlan is what RemoveCorrupt will do to one conversation.
type RepairPlan struct {
	Conversation string `json:"conversation"`
	// Corrupt are the messages to remove, each with an audit event.
	Corrupt []CorruptMessage `json:"corrupt"`
	// Restore is how many messages will be stored again (0 when the
	// removed ones all come before the first kept one: a purge suffices).
	Restore int `json:"restore"`
	// Leftovers counts messages an interrupted repair stored that will be
	// dropped (the originals they copy are kept), and Unfinished is the
	// sequence below which a finished repair left messages to purge.
	Leftovers  int    `json:"leftovers,omitempty"`
	Unfinished uint64 `json:"unfinished,omitempty"`

	keep []uint64 // sequences of the messages kept, in order
	last uint64   // the subject's last sequence when planned
}

// Empty reports whether the plan has nothing to do.
func (p *RepairPlan) Empty() bool {
	return len(p.Corrupt) == 0 && p.Leftovers == 0 && p.Unfinished == 0
}

// scanned is one message as the plan saw it.
type scanned struct {
	seq     uint64
	repair  string // HeaderRepair
	purge   uint64 // HeaderPurgeBelow, on an audit step that decodes
	corrupt *CorruptMessage
}

// PlanRepair reads the conversation's messages and says which are not
// steps of it and how a repair would remove them. It changes nothing.
func (l *Log) PlanRepair(ctx context.Context, conversation string) (*RepairPlan, error) {
	if err := events.ValidateConversationID(conversation); err != nil {
		return nil, fmt.Errorf("plan repair: %w", err)
	}
	var all []scanned
	for raw, err := range l.rawMessages(ctx, conversation) {
		if err != nil {
			return nil, fmt.Errorf("plan repair of %s: %w", conversation, err)
		}
		s := scanned{seq: raw.Sequence, repair: raw.Header.Get(HeaderRepair)}
		// A foreign message goes whatever headers of a repair it carries
		// (a direct get's copy of a message someone chose): it is not a
		// repair's, and no purge point it names is followed.
		if _, err := readStep(conversation, raw); err != nil {
			reason := err.Error()
			var bad *CorruptMessageError
			var foreign *ForeignMessageError
			switch {
			case errors.As(err, &bad):
				reason = bad.Err.Error()
			case errors.As(err, &foreign):
				reason = "not written by turnlog: " + foreign.Reason
				s.repair = ""
			}
			sum := sha256.Sum256(raw.Data)
			s.corrupt = &CorruptMessage{Seq: raw.Sequence, Size: len(raw.Data), SHA256: hex.EncodeToString(sum[:]),
				Headers: joinHeaders(raw.Header), Reason: reason}
		} else if p, err := strconv.ParseUint(raw.Header.Get(HeaderPurgeBelow), 10, 64); err == nil && s.repair != "" {
			s.purge = p
		}
		all = append(all, s)
	}
	plan := &RepairPlan{Conversation: conversation}
	if len(all) == 0 {
		return plan, nil
	}
	plan.last = all[len(all)-1].seq
	// A finished repair supersedes everything below its purge point; the
	// purge may not have happened.
	finished := map[string]bool{}
	for _, s := range all {
		if s.purge > 0 {
			finished[s.repair] = true
			if s.purge > all[0].seq {
				plan.Unfinished = max(plan.Unfinished, s.purge)
			}
		}
	}
	var lastDrop uint64
	for _, s := range all {
		switch {
		case s.seq < plan.Unfinished:
			continue
		case s.corrupt != nil:
			plan.Corrupt = append(plan.Corrupt, *s.corrupt)
			lastDrop = s.seq
		case s.repair != "" && !finished[s.repair]:
			plan.Leftovers++ // a copy an interrupted repair stored
			lastDrop = s.seq
		default:
			plan.keep = append(plan.keep, s.seq)
		}
	}
	if lastDrop > 0 && len(plan.keep) > 0 && plan.keep[0] < lastDrop {
		plan.Restore = len(plan.keep) // a kept message comes before a removed one
	}
	return plan, nil
}

// RemoveCorrupt carries out plan (from PlanRepair, just before): it stores
// the kept messages again if it must, appends the audit step (one
// message.removed per corrupt message, under cause, by actor), purges the
// messages it superseded and deletes the conversation's snapshot. If the
// conversation changed since the plan, it stops with an error matching
// ErrConflict; plan again and repeat. Run it when no request of the
// conversation is in flight: between the first message it stores and the
// purge, readers see the kept messages twice and fail.
func (l *Log) RemoveCorrupt(ctx context.Context, plan *RepairPlan, cause, actor string) error {
	conv := plan.Conversation
	if err := l.ensureHandles(ctx); err != nil {
		return fmt.Errorf("repair %s: %w", conv, err)
	}
	// The repairer stores everything on its own subject (only the admin
	// may: a worker's repair is refused before it stores anything); a
	// restored message keeps the writer of its original in a header,
	// which counts on the admin's subject only (see writerOf).
	subject := l.Names().EventsRoleSubject(conv, l.opts.writerRole)
	purgeAll := func(below uint64) error {
		return l.streamFor(conv).Purge(ctx, jetstream.WithPurgeSubject(l.Names().EventsFilter(conv)), jetstream.WithPurgeSequence(below))
	}
	if plan.Unfinished > 0 {
		// Finish what an earlier repair left: everything below its
		// purge point is superseded.
		if err := purgeAll(plan.Unfinished); err != nil {
			return fmt.Errorf("repair %s: purge below %d: %w", conv, plan.Unfinished, err)
		}
	}
	if len(plan.Corrupt) == 0 && plan.Leftovers == 0 {
		return l.dropSnapshot(ctx, conv)
	}
	expected := plan.last
	purgeBelow := expected + 1 // nothing kept: all goes
	if len(plan.keep) > 0 && plan.Restore == 0 {
		purgeBelow = plan.keep[0] // what goes all comes first
	}
	if plan.Restore > 0 {
		keep := map[uint64]bool{}
		for _, s := range plan.keep {
			keep[s] = true
		}
		first := true
		for raw, err := range l.rawMessages(ctx, conv) {
			if err != nil {
				return fmt.Errorf("repair %s: %w", conv, err)
			}
			if raw.Sequence > plan.last {
				break
			}
			if !keep[raw.Sequence] {
				continue
			}
			msg := &nats.Msg{Subject: subject, Data: raw.Data, Header: nats.Header{}}
			for k, v := range raw.Header {
				if !strings.HasPrefix(k, "Nats-") && k != HeaderRepair && k != HeaderRestoredFrom && k != HeaderRestoredWriter {
					msg.Header[k] = v
				}
			}
			writer := l.writerOf(raw.Subject, raw.Header)
			if writer == "" {
				writer = restoredUnattributed
			}
			msg.Header.Set(HeaderRestoredWriter, writer)
			orig := strconv.FormatUint(raw.Sequence, 10)
			msg.Header.Set(HeaderRepair, cause)
			msg.Header.Set(HeaderRestoredFrom, orig)
			msg.Header.Set(jetstream.MsgIDHeader, "repair:"+cause+":"+orig)
			msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expected, 10))
			seq, err := l.store(ctx, conv, msg, expected)
			if err != nil {
				return err
			}
			if first {
				purgeBelow, first = seq, false
			}
			expected = seq
		}
	}
	if len(plan.Corrupt) > 0 {
		evs := make([]events.Event, len(plan.Corrupt))
		for i, c := range plan.Corrupt {
			evs[i] = events.New(conv, cause, 0, actor, events.MessageRemoved{Seq: int(c.Seq), Size: c.Size, SHA256: c.SHA256, Headers: c.Headers, Reason: c.Reason})
		}
		data, err := events.Encode(evs...)
		if err != nil {
			return fmt.Errorf("repair %s: audit: %w", conv, err)
		}
		msg := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
		msg.Header.Set(HeaderRepair, cause)
		msg.Header.Set(HeaderPurgeBelow, strconv.FormatUint(purgeBelow, 10))
		msg.Header.Set(jetstream.MsgIDHeader, StepID(cause, 0))
		msg.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(expected, 10))
		if _, err := l.store(ctx, conv, msg, expected); err != nil {
			return err
		}
	}
	if err := purgeAll(purgeBelow); err != nil {
		return fmt.Errorf("repair %s: purge below %d (run the repair again to finish): %w", conv, purgeBelow, err)
	}
	return l.dropSnapshot(ctx, conv)
}

// store publishes one message of a repair, expecting the subject at
// expected.
func (l *Log) store(ctx context.Context, conv string, msg *nats.Msg, expected uint64) (uint64, error) {
	msg.Header.Set(ExpectedLastSubjSeqSubjHeader, l.Names().EventsFilter(conv))
	ack, err := l.publish(ctx, msg, l.Names().EventsStreamOf(conv))
	if isWrongLastSequence(err) {
		return 0, fmt.Errorf("repair %s: %w: it changed while it was repaired; plan the repair again", conv, &ConflictError{Conversation: conv, Expected: expected})
	}
	if err != nil {
		return 0, fmt.Errorf("repair %s: %w", conv, err)
	}
	return ack.Sequence, nil
}

// dropSnapshot deletes the conversation's snapshot: it may stand on
// messages a repair removed or renumbered.
func (l *Log) dropSnapshot(ctx context.Context, conv string) error {
	if err := l.snaps.Purge(ctx, conv); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("repair %s: snapshot: %w", conv, err)
	}
	if _, err := l.deleteSnapshotObject(ctx, conv); err != nil {
		return fmt.Errorf("repair %s: snapshot object: %w", conv, err)
	}
	return nil
}

// rawMessages yields the conversation's messages as stored, undecoded.
func (l *Log) rawMessages(ctx context.Context, conversation string) iter.Seq2[*jetstream.RawStreamMsg, error] {
	names := l.Names()
	subject := names.EventsFilter(conversation)
	return func(yield func(*jetstream.RawStreamMsg, error) bool) {
		var next uint64 = 1
		for {
			batch, err := jetstreamext.GetBatch(ctx, l.js, names.EventsStreamOf(conversation), readBatch,
				jetstreamext.GetBatchSeq(next), jetstreamext.GetBatchSubject(subject))
			if err != nil {
				yield(nil, err)
				return
			}
			got := 0
			var pending uint64
			for raw, err := range batch {
				if errors.Is(err, jetstreamext.ErrNoMessages) {
					break
				}
				if err != nil {
					yield(nil, err)
					return
				}
				got++
				fromServer(raw)
				next = raw.Sequence + 1
				pending, _ = strconv.ParseUint(serverValue(raw.Header, "Nats-Num-Pending"), 10, 64)
				if !yield(raw, nil) {
					return
				}
			}
			if got == 0 || pending == 0 {
				if err := ctx.Err(); err != nil {
					yield(nil, err)
				} else if pending > 0 {
					yield(nil, fmt.Errorf("the batch from sequence %d ended before its messages arrived", next))
				}
				return
			}
		}
	}
}

// joinHeaders flattens NATS headers for the audit, leaving out the
// headers a direct get adds (Nats-Stream, Nats-Sequence, ...), which say
// where the message was read, not what it was: the last value of each
// (see serverValue); those stored with the message are kept.
func joinHeaders(h nats.Header) map[string]string {
	out := map[string]string{}
	for k, v := range h {
		switch k {
		case "Nats-Stream", "Nats-Sequence", "Nats-Time-Stamp", "Nats-Subject", "Nats-Num-Pending", "Nats-Last-Sequence":
			if v = v[:max(len(v)-1, 0)]; len(v) == 0 {
				continue
			}
		}
		out[k] = strings.Join(v, ", ")
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
