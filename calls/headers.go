package calls

import (
	"net/http"
	"strings"
)

// RecordedHeaders are the request headers a call's record keeps, by their
// lower-case names: those that change what the provider does with the
// body (the API's version, beta features that change what the model sees
// or does), never a credential. Any other header is not recorded.
var RecordedHeaders = []string{"anthropic-version", "anthropic-beta", "openai-beta"}

// MetaHeaderPrefix begins the keys of inference.started's gateway map
// that hold a call's recorded headers: "header.anthropic-beta".
const MetaHeaderPrefix = "header."

// HeadersOf returns the recorded headers h holds, by lower-case name
// (several values of one header joined with ", "); nil for none.
func HeadersOf(h http.Header) map[string]string {
	var out map[string]string
	for _, name := range RecordedHeaders {
		vs := h.Values(name)
		if len(vs) == 0 {
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
// by lower-case name; nil for none.
func recordedOnly(h map[string]string) map[string]string {
	var out map[string]string
	for k, v := range h {
		name := strings.ToLower(k)
		for _, r := range RecordedHeaders {
			if name == r {
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
