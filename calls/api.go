package calls

import (
	"fmt"
	"strings"
)

// API names the provider API a call was made in. The names are those of
// import --calls' "api" field and of the recorded inference.started's
// gateway "api" key.
type API string

// The APIs the gateway records.
const (
	ChatCompletions API = "chat.completions"
	Responses       API = "responses"
	Messages        API = "messages"
)

// ParseAPI returns the API named s, or an error listing the names.
func ParseAPI(s string) (API, error) {
	switch a := API(s); a {
	case ChatCompletions, Responses, Messages:
		return a, nil
	}
	return "", fmt.Errorf("api %q: use %s, %s or %s", s, ChatCompletions, Responses, Messages)
}

// Path is the API's route under the base URL of its SDK (/v1/... for both
// providers' SDKs as turnlog is addressed).
func (a API) Path() string {
	switch a {
	case ChatCompletions:
		return "/v1/chat/completions"
	case Responses:
		return "/v1/responses"
	case Messages:
		return "/v1/messages"
	}
	return ""
}

// APIOfPath returns the API whose route path is, ok false for any other.
func APIOfPath(path string) (API, bool) {
	path = strings.TrimSuffix(path, "/")
	for _, a := range []API{ChatCompletions, Responses, Messages} {
		if a.Path() == path {
			return a, true
		}
	}
	return "", false
}

// CompactPath is the route of the Responses API's compaction (the
// provider rewrites a history into fewer items): recorded as a Responses
// call whose output replaces the conversation's history (Call.Compact).
const CompactPath = "/v1/responses/compact"

// Anthropic reports whether the API is Anthropic's (its errors, its auth
// header, its upstream).
func (a API) Anthropic() bool { return a == Messages }
