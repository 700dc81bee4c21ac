package middlewares

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// A chat request's "data" is recorded as data.set in the conversation's
// Turn, where middlewares read it. Most keys are context (timezone, page)
// that no middleware interprets; the ones below change what the model is
// told, and some of them are decisions only the operator's own middlewares
// may record. This file says which is which, in one place, so that a
// request cannot smuggle a system prompt, a trust level or a lock in.

// DataKey describes a Turn data key a middleware reads.
type DataKey struct {
	// Key is the data key.
	Key string `json:"key"`
	// ReadBy names the middleware (profile name) that reads it.
	ReadBy string `json:"read_by"`
	// Meaning says what it changes.
	Meaning string `json:"meaning"`
	// FromRequest says whether a chat request may set it: "yes", or
	// "profile" (only when the profile lists it in allow_request_data).
	FromRequest string `json:"from_request"`
}

// RequestDataKeys lists the data keys middlewares read. docs/requests.md's
// "Request data" table is this list.
var RequestDataKeys = []DataKey{
	{Key: DataCwd, ReadBy: "template", FromRequest: "yes",
		Meaning: "the conversation's working directory (absolute): where the template's prompt:cwd, git: and file: variables read; their values are untrusted text in the prompt"},
	{Key: DataNoSystemPrompt, ReadBy: "template", FromRequest: "profile",
		Meaning: "the template decided this conversation has no system prompt (the template records it itself); from a request it would remove the prompt"},
}

// ReservedDataPrefixes are the data key namespaces of turnlog's own
// middlewares: what they record about a conversation's prompt, trust and
// locks. A chat request may not set a key in them unless its profile
// allows that key (allow_request_data), whether or not a middleware reads
// it today.
var ReservedDataPrefixes = []string{"systemprompt.", "globalprompt.", "trust.", "roles.", "compaction.", "turnlog."}

// ErrReservedData is wrapped by CheckRequestData's error.
var ErrReservedData = errors.New("reserved data key")

// ReservedDataKey reports whether key lies in a reserved namespace.
func ReservedDataKey(key string) bool {
	for _, p := range ReservedDataPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// CheckRequestData refuses a chat request's data that sets a reserved key
// (see ReservedDataPrefixes) that allow does not list. The error names the
// first such key, in key order, and what to do.
func CheckRequestData(data map[string]string, allow []string) error {
	var bad []string
	for k := range data {
		if ReservedDataKey(k) && !slices.Contains(allow, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	slices.Sort(bad)
	return reservedDataError(fmt.Sprintf("data key %q is reserved for turnlog's middlewares (namespaces %s): a request may not set it, since it would change the conversation's system prompt, trust or locks; remove it, or list it in the profile's allow_request_data",
		truncateKey(bad[0]), strings.Join(ReservedDataPrefixes, " ")))
}

// reservedDataError is CheckRequestData's error: its message alone, and
// ErrReservedData for errors.Is.
type reservedDataError string

func (e reservedDataError) Error() string        { return string(e) }
func (e reservedDataError) Is(target error) bool { return target == ErrReservedData }

func truncateKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "..."
	}
	return k
}
