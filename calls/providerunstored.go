package calls

// This file holds what the record says of items an app put into a
// provider's conversation (see provideritems.go) that it cannot hold:
// larger than one NATS message. The provider holds them and its model
// reads them, so the record marks their place, by the hash of the bytes
// the app sent, as a model call's content too large to store is recorded:
// nothing the provider holds is dropped without a record.

import (
	"fmt"
	"strconv"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/plural"
	"github.com/turnlog/turnlog/projector"
)

// Block metadata of the block that stands in the record for items put
// into a provider's conversation that it cannot hold (PlanItemsUnstored),
// beside MetaAddedBy.
const (
	// MetaUnstored says why the items are not stored.
	MetaUnstored = "gateway.unstored"
	// MetaItems is how many items the request put in.
	MetaItems = "gateway.items"
	// MetaWireSHA256 is the hex SHA-256 of the request's body as the app
	// sent it (WireSHA256), MetaWireBytes its size in bytes.
	MetaWireSHA256 = "gateway.wire_sha256"
	MetaWireBytes  = "gateway.wire_bytes"
)

// UnstoredItems is a request's items that the record cannot hold.
type UnstoredItems struct {
	// Items is how many items the request put in.
	Items int
	// Wire is WireSHA256 of the request's body, Bytes its size.
	Wire  string
	Bytes int
	// Reason says why they are not stored ("too large to store: ...").
	Reason string
}

// PlanItemsUnstored returns the events that mark, in the provider's
// conversation whose Turn is turn, the place of items w put into it that
// the record cannot hold, and applies them: a conversation.started when
// it has no events, then a block.inserted at the Turn's end (where the
// provider put the items) of a block of kind other that says so in its
// text and its metadata (MetaAddedBy, MetaItems, MetaWireSHA256,
// MetaWireBytes, MetaUnstored). It is small whatever the items' size.
func PlanItemsUnstored(turn *projector.Turn, w *ProviderWrite, u UnstoredItems) ([]events.Event, error) {
	evs, emit, err := w.start(turn)
	if err != nil {
		return nil, err
	}
	b := events.Block{
		ID:   ulid.Make().String(),
		Kind: events.KindOther,
		Text: fmt.Sprintf("[%s put into the provider's conversation by %s, not stored: %s; the request's body: %d bytes, SHA-256 %s]",
			plural.Count(u.Items, "item"), w.By, u.Reason, u.Bytes, u.Wire),
		Meta: map[string]string{
			MetaAddedBy:    w.By,
			MetaItems:      strconv.Itoa(u.Items),
			MetaWireSHA256: u.Wire,
			MetaWireBytes:  strconv.Itoa(u.Bytes),
			MetaUnstored:   u.Reason,
		},
	}
	if err := emit(events.BlockInserted{Index: len(turn.Blocks), Block: b, Reason: u.Reason}); err != nil {
		return nil, err
	}
	return *evs, nil
}
