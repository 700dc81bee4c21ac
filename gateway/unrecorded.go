package gateway

import (
	"net/http"
	"strings"
)

// modelCallSuffixes end the paths of model calls in the providers' APIs
// and their variants (an Azure OpenAI deployment's chat completions, the
// legacy text completions).
var modelCallSuffixes = []string{"/chat/completions", "/completions", "/responses", "/messages"}

// maxWarnedPaths bounds the paths forwardUnrecorded remembers having
// warned of, whatever clients send.
const maxWarnedPaths = 256

// forwardUnrecorded counts a request forwarded on a path the gateway does
// not record, and warns, once a path, when it looks like a model call: an
// app pointed at the gateway whose calls go to such a path (an Azure
// deployment's route, the legacy text completions) would otherwise be
// missing from the record without a word.
func (g *Gateway) forwardUnrecorded(r *http.Request) {
	kind := "other"
	if r.Method == http.MethodPost && looksLikeModelCall(r.URL.Path) {
		kind = "model_call"
		first := g.firstWarning(r.URL.Path)
		switch {
		case !first:
		case isBatch(r.URL.Path):
			g.cfg.Logger.Warn("gateway: forwarded a batch of model calls unrecorded: the provider runs a batch's calls later and its results are fetched from the provider, so the gateway records none of them; send the calls one by one through POST /v1/chat/completions, /v1/responses or /v1/messages to have them recorded",
				"path", r.URL.Path)
		default:
			g.cfg.Logger.Warn("gateway: forwarded a model call unrecorded: the gateway records POST /v1/chat/completions, /v1/responses and /v1/messages only; point the SDK's base URL so that its calls take those paths",
				"path", r.URL.Path)
		}
	}
	g.cfg.Metrics.forwarded.WithLabelValues(kind).Inc()
}

func looksLikeModelCall(path string) bool {
	path = strings.TrimSuffix(path, "/")
	if isBatch(path) {
		return true
	}
	for _, s := range modelCallSuffixes {
		if strings.HasSuffix(path, s) {
			return true
		}
	}
	return false
}

// isBatch reports whether path creates a batch of model calls (OpenAI's
// /v1/batches, Anthropic's /v1/messages/batches).
func isBatch(path string) bool {
	return strings.HasSuffix(strings.TrimSuffix(path, "/"), "/batches")
}
