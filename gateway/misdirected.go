package gateway

import (
	"net/http"
	"strings"
)

// publicBase is the scheme and host an app reached the gateway at, for a
// hint that names its base URL: the request's own, unless a proxy in
// front (one that terminates TLS, or serves the gateway under another
// name) says otherwise in X-Forwarded-Proto and X-Forwarded-Host, or in
// Forwarded's proto and host; the first proxy's, the one the app called.
// It only shapes the text of an answer to the same client, so the headers
// are taken as said, but only when they can be a scheme and a host.
func publicBase(r *http.Request) string {
	proto, host := "http", r.Host
	if r.TLS != nil {
		proto = "https"
	}
	fproto, fhost := forwarded(r.Header)
	if p := strings.ToLower(fproto); p == "http" || p == "https" {
		proto = p
	}
	if validHost(fhost) {
		host = fhost
	}
	return proto + "://" + host
}

// forwarded returns the first proxy's proto and host: Forwarded's, else
// X-Forwarded-Proto's and X-Forwarded-Host's ("" where none says).
func forwarded(h http.Header) (proto, host string) {
	if f := h.Get("Forwarded"); f != "" {
		first, _, _ := strings.Cut(f, ",")
		for _, pair := range strings.Split(first, ";") {
			k, v, ok := strings.Cut(strings.TrimSpace(pair), "=")
			if !ok {
				continue
			}
			v = strings.Trim(v, `"`)
			switch strings.ToLower(k) {
			case "proto":
				proto = v
			case "host":
				host = v
			}
		}
		return proto, host
	}
	firstOf := func(v string) string {
		v, _, _ = strings.Cut(v, ",")
		return strings.TrimSpace(v)
	}
	return firstOf(h.Get("X-Forwarded-Proto")), firstOf(h.Get("X-Forwarded-Host"))
}

// validHost reports whether s can be a host[:port] of a URL: letters,
// digits, '.', '-', ':' and an IPv6 literal's brackets.
func validHost(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == ':', c == '[', c == ']':
		default:
			return false
		}
	}
	return true
}

// withoutV1 are the model calls of the OpenAI API as its SDKs make them
// under their base URL: POSTed to one of these paths, a call comes from
// an SDK whose base URL lacks /v1.
var withoutV1 = []string{"/chat/completions", "/completions", "/responses", "/embeddings", "/moderations"}

// Handles reports whether r is the gateway's on a listener it shares
// with other routes (serve's HTTP API): every /v1/ path, and a model call
// of an OpenAI SDK whose base URL lacks /v1 (POST /chat/completions,
// /responses, ...), which the gateway answers with what to fix instead
// of leaving it to the other routes' 404.
func (g *Gateway) Handles(r *http.Request) bool {
	return strings.HasPrefix(r.URL.Path, "/v1/") || missingV1(r) || messagesWithoutV1(r)
}

// messagesWithoutV1 reports whether r is a Messages API call (POST
// /messages, /messages/count_tokens, ...) made under a base URL without
// /v1: what a client that appends /messages to a base URL ending in /v1
// (the Vercel AI SDK's @ai-sdk/anthropic) makes when given turnlog's
// address as the official Anthropic SDKs take it.
func messagesWithoutV1(r *http.Request) bool {
	path := strings.TrimSuffix(r.URL.Path, "/")
	return r.Method == http.MethodPost && (path == "/messages" || strings.HasPrefix(path, "/messages/"))
}

// missingV1 reports whether r is an OpenAI SDK's model call made under a
// base URL without /v1.
func missingV1(r *http.Request) bool {
	if r.Method != http.MethodPost {
		return false
	}
	path := strings.TrimSuffix(r.URL.Path, "/")
	for _, p := range withoutV1 {
		if path == p || (p == "/responses" && strings.HasPrefix(path, p+"/")) {
			return true
		}
	}
	return false
}

// misdirected answers, 404 in the API's error shape and with nothing
// forwarded, a call whose path shows its SDK's base URL is wrong for the
// gateway: an OpenAI SDK's without /v1 (POST /chat/completions), or with
// /v1 twice, as an Anthropic SDK's base URL ending in /v1 makes
// (/v1/v1/messages). Such a call would otherwise get the HTTP API's 404,
// or be forwarded unrecorded to a path the provider does not have.
// It reports whether it answered.
func (g *Gateway) misdirected(w http.ResponseWriter, r *http.Request) bool {
	base := publicBase(r)
	var anthropic bool
	var msg string
	switch {
	case uncleanPath(r.URL.Path):
		anthropic = strings.Contains(r.URL.Path, "messages") || anthropicHeaders(r.Header)
		msg = "no such route: " + r.URL.Path + " has an empty, '.' or '..' segment, which a provider may resolve to a model call the gateway would not record; " +
			"call the route by its plain path (a base URL has no trailing slash: " + base + "/v1 for an OpenAI SDK, " + base + " for an Anthropic SDK); nothing was forwarded"
	case strings.HasPrefix(r.URL.Path, "/v1/v1/"):
		anthropic = strings.HasPrefix(r.URL.Path, "/v1/v1/messages") || anthropicHeaders(r.Header)
		if anthropic {
			msg = "no such route: " + r.URL.Path + " has /v1 twice; the Anthropic SDK's base URL is turnlog's address without /v1: " + base +
				" (its calls add /v1/messages themselves); nothing was forwarded"
		} else {
			msg = "no such route: " + r.URL.Path + " has /v1 twice; an OpenAI SDK's base URL ends in /v1 once: " + base +
				"/v1 (an Anthropic SDK's is " + base + ", without /v1); nothing was forwarded"
		}
	case messagesWithoutV1(r):
		anthropic = true
		msg = "no such route: " + r.URL.Path + "; this client appends /messages to its base URL (as the Vercel AI SDK's @ai-sdk/anthropic does), " +
			"so its base URL is turnlog's address with /v1: " + base + "/v1 (the official Anthropic SDKs take " + base +
			", without /v1); nothing was forwarded"
	case missingV1(r):
		msg = "no such route: " + r.URL.Path + "; an OpenAI SDK's base URL must end in /v1: " + base + "/v1; nothing was forwarded"
	default:
		return false
	}
	if g.firstWarning(r.URL.Path) {
		g.cfg.Logger.Warn("gateway: answered 404 to a call whose path shows its SDK's base URL is wrong; nothing was forwarded",
			"path", r.URL.Path, "fix", msg)
	}
	g.cfg.Metrics.errors.WithLabelValues("misdirected").Inc()
	writeError(w, anthropic, http.StatusNotFound, msg)
	return true
}

// uncleanPath reports whether path (decoded: an encoded '/' or '.' counts
// as one) has an empty, "." or ".." segment; a trailing slash is allowed.
// The recorded routes are matched on the path as sent, and every other
// path is forwarded as it came: a provider behind a proxy that resolves
// /v1/chat//completions or /v1/x/../chat/completions would answer a
// model call the gateway forwarded unrecorded, and /v1/../x would leave
// the upstream's /v1.
func uncleanPath(path string) bool {
	// Segment by segment without splitting: every call's path passes
	// here.
	rest := strings.TrimSuffix(strings.TrimPrefix(path, "/"), "/")
	for {
		seg, more, found := strings.Cut(rest, "/")
		if seg == "" || seg == "." || seg == ".." {
			return true
		}
		if !found {
			return false
		}
		rest = more
	}
}

// anthropicHeaders reports whether a call's headers are an Anthropic
// SDK's (its x-api-key or anthropic-version): its errors are answered in
// Anthropic's shape.
func anthropicHeaders(h http.Header) bool {
	return h.Get("X-Api-Key") != "" || h.Get("Anthropic-Version") != ""
}

// firstWarning reports whether path is not yet among the paths the log
// warned of, and notes it (up to maxWarnedPaths, whatever clients send).
func (g *Gateway) firstWarning(path string) bool {
	g.warnedMu.Lock()
	defer g.warnedMu.Unlock()
	if g.warned[path] || len(g.warned) >= maxWarnedPaths {
		return false
	}
	g.warned[path] = true
	return true
}
