package gateway

import (
	"net/http"
	"strings"

	"github.com/turnlog/turnlog/calls"
	"github.com/turnlog/turnlog/internal/bearer"
)

// TokenHeader carries turnlog's token in pass-through mode, where the
// provider's own credential headers go upstream unchanged.
const TokenHeader = "Turnlog-Token"

// ConversationHeader names a call's conversation (request) and says which
// conversation a call was recorded in (response).
const ConversationHeader = "Turnlog-Conversation"

// authorize checks a call before anything is forwarded or recorded and
// prepares its headers for the upstream: in managed mode (the gateway holds
// the provider key) the client's API key must be the token and is replaced
// by the provider key; in pass-through mode Turnlog-Token must be the token
// and the provider headers are left as they came. No Turnlog-* header
// goes upstream (the caller strips them). It returns "" or why the call is
// refused (401).
func (g *Gateway) authorize(h http.Header, anthropic bool, managedKey string) string {
	key := bearerToken(h.Get("Authorization"))
	if anthropic && h.Get("X-Api-Key") != "" {
		key = h.Get("X-Api-Key")
	}
	// The token as the API key as well as in Turnlog-Token: the client
	// means the managed key, where there is one.
	asKey := g.cfg.Token != "" && key != "" && g.tokenOK(key)
	if tok := h.Get(TokenHeader); (tok != "" && !(asKey && managedKey != "")) || managedKey == "" {
		if g.cfg.Token == "" {
			return ""
		}
		if tok == "" {
			return "this gateway holds no provider key for this API, so each call must carry turnlog's token in the header " + TokenHeader +
				" (and its provider key as usual); or start the gateway with TURNLOG_OPENAI_API_KEY / TURNLOG_ANTHROPIC_API_KEY and use the token as the API key"
		}
		if !g.tokenOK(tok) {
			return "the " + TokenHeader + " header is not turnlog's token; use " + tokenWhere
		}
		if asKey {
			// Forwarded, it would hand turnlog's token to the provider.
			return "the API key is turnlog's token, which is never sent to the provider: with " + TokenHeader +
				" (pass-through) send the provider's own key as the API key; or start the gateway with TURNLOG_OPENAI_API_KEY / TURNLOG_ANTHROPIC_API_KEY to have it send its key"
		}
		return g.tokenBoundUpstream(h)
	}
	// Managed: the client's API key is turnlog's token.
	if h.Get(TokenHeader) != "" && !g.tokenOK(h.Get(TokenHeader)) {
		return "the " + TokenHeader + " header is not turnlog's token; use " + tokenWhere
	}
	if g.cfg.Token != "" && key == "" {
		return "no API key was sent: this gateway sends its own provider key upstream, and clients send turnlog's token as their API key (" + tokenWhere + ")"
	}
	if g.cfg.Token != "" && !g.tokenOK(key) {
		return "the API key is not turnlog's token: this gateway sends its own provider key upstream, and clients send turnlog's token as their API key (" + tokenWhere + ")"
	}
	h.Del("Authorization")
	h.Del("X-Api-Key")
	if anthropic {
		h.Set("X-Api-Key", managedKey)
	} else {
		h.Set("Authorization", "Bearer "+managedKey)
	}
	return g.tokenBoundUpstream(h)
}

// tokenBoundUpstream returns why a call is refused when one of the
// credential headers it would send upstream (after authorize's changes)
// still holds turnlog's token, or "". The token is checked in the one
// header the API key is taken from; the others go upstream unchanged, so
// a token also sent in one of them (Authorization beside Anthropic's
// x-api-key, Azure's api-key) would reach the provider.
func (g *Gateway) tokenBoundUpstream(h http.Header) string {
	if g.cfg.Token == "" {
		return ""
	}
	for _, k := range credentialHeaders {
		for _, v := range h.Values(k) {
			if b := bearerToken(v); b != "" {
				v = b
			}
			if g.tokenOK(strings.TrimSpace(v)) {
				return "the " + k + " header holds turnlog's token, which is never sent to the provider, and the gateway forwards that header as it came: send the token only as the API key (managed key) or in " + TokenHeader + " (pass-through)"
			}
		}
	}
	return ""
}

// tokenWhere says where turnlog's token is.
const tokenWhere = "the token in the data directory's auth/http.token, .turnlog/auth/http.token where `turnlog serve` runs by default, or the one the gateway was given in TURNLOG_TOKEN"

// bearerToken is the token of an Authorization header's value, "" when it
// holds none.
func bearerToken(v string) string {
	tok, _ := bearer.Parse(v)
	return tok
}

// tokenOK reports whether tok is turnlog's token (bearer.Token: in
// constant time).
func (g *Gateway) tokenOK(tok string) bool { return g.token.Match(tok) }

// stripTurnlog removes every Turnlog-* header: they are for turnlog, never
// for the provider.
func stripTurnlog(h http.Header) {
	for k := range h {
		if strings.HasPrefix(strings.ToLower(k), "turnlog-") {
			delete(h, k)
		}
	}
}

// MetricsHandler serves the gateway's series (Metrics().Handler()) to a
// request that presents turnlog's token, as "Authorization: Bearer" (what
// a Prometheus scrape sends with authorization.credentials_file) or in
// Turnlog-Token; others get 401. It is for the listener apps reach
// (turnlog gateway's), where the counts of calls, errors and findings are
// not for whoever can reach it.
func (g *Gateway) MetricsHandler() http.Handler {
	metrics := g.cfg.Metrics.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := r.Header.Get(TokenHeader)
		if tok == "" {
			tok = bearerToken(r.Header.Get("Authorization"))
		}
		if g.cfg.Token != "" && !g.tokenOK(tok) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
			http.Error(w, "the gateway's metrics need turnlog's token: Authorization: Bearer <token> ("+tokenWhere+")", http.StatusUnauthorized)
			return
		}
		metrics.ServeHTTP(w, r)
	})
}

// credentialHeaders are the headers a provider reads its key from:
// OpenAI's (and every OpenAI-compatible server's) Authorization, the
// Anthropic API's x-api-key, Azure OpenAI's api-key.
var credentialHeaders = []string{"Authorization", "X-Api-Key", "Api-Key"}

// minSecretLen is the shortest value taken for a credential: a shorter one
// would redact ordinary words out of error messages.
const minSecretLen = 8

// credentials returns the credential values h sends upstream (after
// authorize: the managed key, or the client's own in pass-through).
func credentials(h http.Header) []string {
	var out []string
	for _, k := range credentialHeaders {
		for _, v := range h.Values(k) {
			if b := bearerToken(v); b != "" {
				v = b
			}
			if v = strings.TrimSpace(v); len(v) >= minSecretLen {
				out = append(out, v)
			}
		}
	}
	return out
}

// redacted is what a credential echoed by an upstream is recorded as.
const redacted = "[credential redacted by turnlog]"

// redactOutcome takes the call's credentials out of the failure and the
// response's error text that o records: provider keys are never recorded,
// also when an upstream puts one in its error ("Incorrect API key
// provided: sk-...").
func redactOutcome(o calls.Outcome, secrets []string) calls.Outcome {
	if len(secrets) == 0 {
		return o
	}
	o.Failure = redact(o.Failure, secrets)
	if o.Output != nil && o.Output.Error != "" {
		if e := redact(o.Output.Error, secrets); e != o.Output.Error {
			out := *o.Output
			out.Error = e
			o.Output = &out
		}
	}
	return o
}

func redact(s string, secrets []string) string {
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, redacted)
	}
	return s
}
