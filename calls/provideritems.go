package calls

// This file holds items an app puts into a conversation the provider
// holds (OpenAI's Conversations API) other than by a model call: the items
// of POST /v1/conversations and POST /v1/conversations/{id}/items, and
// the item DELETE /v1/conversations/{id}/items/{item_id} removes. The
// model reads them before the next call's input (which names the
// conversation and sends its new items only), so the conversation's
// record holds them where the provider does: a system prompt seeded so is
// the one the record shows active.

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// Block metadata of items put into a provider's conversation beside its
// model calls.
const (
	// MetaAddedBy is the request that put the block's item into the
	// provider's conversation ("POST /v1/conversations/{id}/items").
	MetaAddedBy = "gateway.added_by"
	// MetaItemID is the ID the provider gave such an item, by which a
	// later request deletes it.
	MetaItemID = "gateway.item_id"
)

// ParseItems reads the items member of a Conversations API request body
// (creating a conversation, or adding items to one) as the Responses
// API's input items: nil when it has none.
func ParseItems(body []byte) ([]Item, error) {
	var b struct {
		Items json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, fmt.Errorf("the body is not a JSON object: %w", err)
	}
	items, _, _, isInput, err := (*ParseCache)(nil).parseInput(Responses, "items", b.Items)
	if err != nil || !isInput {
		return nil, err
	}
	return items, nil
}

// ProviderWrite is one request that changed a provider's conversation
// beside its model calls, as its record says it.
type ProviderWrite struct {
	// ID names the request (the events' cause); "" for a new ULID.
	ID string
	// By is the request as its record shows it, method and path.
	By string
	// Time stamps the events (zero: now).
	Time time.Time
}

func (w *ProviderWrite) event(conv string, p events.Payload) events.Event {
	if w.ID == "" {
		w.ID = ulid.Make().String()
	}
	e := events.New(conv, w.ID, 0, Actor, p)
	if !w.Time.IsZero() {
		e.Time = w.Time.UTC()
	}
	return e
}

// PlanItemsAdded returns the events that record items put into the
// provider's conversation whose Turn is turn, and applies them: a
// conversation.started when it has no events, then each item's blocks
// appended after the Turn's (where the provider puts them), marked with
// MetaAddedBy and, where the provider's answer gave it, the item's ID
// (ids[i] for items[i]; ids may be shorter or nil).
func PlanItemsAdded(turn *projector.Turn, w *ProviderWrite, items []Item, ids []string) ([]events.Event, error) {
	evs, emit, err := w.start(turn)
	if err != nil {
		return nil, err
	}
	for i := range items {
		for j := range items[i].Blocks {
			b := items[i].Blocks[j]
			meta := make(map[string]string, len(b.Meta)+2)
			for k, v := range b.Meta {
				meta[k] = v
			}
			meta[MetaAddedBy] = w.By
			if i < len(ids) && ids[i] != "" && j == 0 {
				meta[MetaItemID] = ids[i]
			}
			b.Meta = meta
			if err := emit(appendPayload(ulid.Make().String(), &b, len(turn.Blocks))); err != nil {
				return nil, err
			}
		}
	}
	return *evs, nil
}

// start returns the events w records in the conversation whose Turn is
// turn, so far a conversation.started when it has no events, and emit,
// which applies an event of w to turn and adds it to them.
func (w *ProviderWrite) start(turn *projector.Turn) (evs *[]events.Event, emit func(events.Payload) error, err error) {
	evs = new([]events.Event)
	emit = func(p events.Payload) error {
		e := w.event(turn.Conversation, p)
		if err := projector.Apply(turn, e); err != nil {
			return fmt.Errorf("record %s: %w", w.By, err)
		}
		*evs = append(*evs, e)
		return nil
	}
	if turn.Events == 0 {
		err = emit(events.ConversationStarted{})
	}
	return evs, emit, err
}

// PlanItemDeleted returns the blocks.removed that records the provider
// deleting item id from the conversation whose Turn is turn, and applies
// it; ok is false when the Turn holds no item of that ID (one the record
// cannot place: added before the app pointed at turnlog, or a call's
// input item, whose ID the provider keeps to itself).
func PlanItemDeleted(turn *projector.Turn, w *ProviderWrite, id string) (evs []events.Event, ok bool, err error) {
	start, end, found := itemAt(turn.Blocks, id)
	if !found {
		return nil, false, nil
	}
	gone := make([]string, 0, end-start)
	for _, b := range turn.Blocks[start:end] {
		gone = append(gone, b.ID)
	}
	e := w.event(turn.Conversation, events.BlocksRemoved{BlockIDs: gone, Reason: "the app deleted item " + id + " from the provider's conversation (" + w.By + ")"})
	if err := projector.Apply(turn, e); err != nil {
		return nil, true, fmt.Errorf("record %s: %w", w.By, err)
	}
	return []events.Event{e}, true, nil
}

// ResponseItemIDs reads the IDs of the items a Conversations API answer
// lists (its data), in order: the items POST .../items added.
func ResponseItemIDs(body []byte) []string {
	var r struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if json.Unmarshal(body, &r) != nil {
		return nil
	}
	ids := make([]string, len(r.Data))
	for i, d := range r.Data {
		ids[i] = d.ID
	}
	return ids
}
