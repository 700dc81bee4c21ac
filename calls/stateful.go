package calls

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/projector"
)

// A Responses API call may leave its history on the provider's side and
// send only its new items: by previous_response_id (the history of a
// stored response) or by conversation (OpenAI's Conversations API, whose
// items the provider reads before the call's input).

// Continues reports whether the call's input is its new items only, the
// rest of what the model reads being held by the provider: a Responses
// call naming a previous response or a provider conversation.
func (r *Request) Continues() bool {
	return r.PreviousResponseID != "" || r.ProviderConversation != ""
}

// conversationMember reads the Responses API's conversation member: an ID,
// or an object whose id is the ID. Anything else names none ("").
func conversationMember(raw []byte) string {
	if id, err := stringMember("conversation", raw); err == nil {
		return id
	}
	var obj struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return ""
	}
	return obj.ID
}

// ProviderConversationID is the turnlog conversation that records the
// calls of a provider's conversation: the provider's ID itself when it is
// a valid conversation ID (OpenAI's are, "conv_…"), so that the app's ID
// finds it in turnlog; otherwise "provider-" and a hash of it.
func ProviderConversationID(id string) string {
	if events.ValidateConversationID(id) == nil {
		return id
	}
	h := sha256.Sum256([]byte(id))
	return "provider-" + hex.EncodeToString(h[:16])
}

// ActivePrompt is the system prompt a call's model read: the Turn's, or,
// for a call continuing a history the provider holds (continues), the
// first system block of its own input, else the Turn's prompt if it is a
// message of that history. The provider keeps the history's items, not a
// call's instructions (the Responses API's "instructions" apply to their
// call alone): a call that sends none has no prompt from them.
func ActivePrompt(turn *projector.Turn, input []events.Block, continues bool) (events.Block, bool) {
	if !continues {
		sp, _, ok := turn.SystemPrompt()
		return sp, ok
	}
	for _, b := range input {
		if b.Kind == events.KindSystem {
			return b, true
		}
	}
	sp, _, ok := turn.SystemPrompt()
	if !ok || sp.Meta[MetaField] != "" {
		return events.Block{}, false
	}
	return sp, true
}
