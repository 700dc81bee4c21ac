package calls

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/turnlog/turnlog/events"
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
