package calls

import (
	"net/http"
	"strconv"
	"strings"
)

// RecordedHeaders are the request headers a call's record keeps, by their
// lower-case names: those that change what the provider does with the
// body (the API's version, beta features that change what the model sees
// or does), and the SDK's count of its retries of the call (RetryHeader),
// never a credential. Any other header is not recorded.
var RecordedHeaders = []string{"anthropic-version", "anthropic-beta", "openai-beta", RetryHeader}

// RetryHeader is the header in which the SDKs built by Stainless (OpenAI's
// and Anthropic's, in every language) count their retries of a call: 0 on
// the first attempt, 1 and up on each retry of one that failed. A retry of
// a conversation's failed first call continues its conversation
// (FindRetried).
const RetryHeader = "x-stainless-retry-count"

// Retried reports whether headers (HeadersOf) say the call is an SDK's
// retry of one that failed.
func Retried(headers map[string]string) bool { return retryCount(headers[RetryHeader]) }

// retryCount reports whether v, a RetryHeader's value, counts a retry
// (1 and up): a first attempt's 0 says nothing and is not recorded.
func retryCount(v string) bool {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return err == nil && n > 0
}

// MetaHeaderPrefix begins the keys of inference.started's gateway map
// that hold a call's recorded headers: "header.anthropic-beta".
const MetaHeaderPrefix = "header."

// HeadersOf returns the recorded headers h holds, by lower-case name
// (several values of one header joined with ", "); nil for none.
func HeadersOf(h http.Header) map[string]string {
	var out map[string]string
	for _, name := range RecordedHeaders {
		vs := h.Values(name)
		if len(vs) == 0 || name == RetryHeader && !retryCount(vs[0]) {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[name] = strings.Join(vs, ", ")
	}
	return out
}

// recordedOnly returns the members of h whose names are recorded headers,
// by lower-case name (a first attempt's retry count left out, as by
// HeadersOf); nil for none.
func recordedOnly(h map[string]string) map[string]string {
	var out map[string]string
	for k, v := range h {
		name := strings.ToLower(k)
		for _, r := range RecordedHeaders {
			if name == r && (name != RetryHeader || retryCount(v)) {
				if out == nil {
					out = map[string]string{}
				}
				out[name] = v
			}
		}
	}
	return out
}

// HeadersOfMeta returns the recorded headers of a call from its
// inference.started's gateway map; nil for none.
func HeadersOfMeta(gw map[string]string) map[string]string {
	var out map[string]string
	for k, v := range gw {
		if name, ok := strings.CutPrefix(k, MetaHeaderPrefix); ok {
			if out == nil {
				out = map[string]string{}
			}
			out[name] = v
		}
	}
	return out
}
