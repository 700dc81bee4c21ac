package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/turnlog/turnlog/internal/bearer"
)

// isConsolePage reports whether r asks for a page or an asset of the web
// console: they hold no data (their scripts call the API, with the token),
// so they load without the token, and the page can ask for it.
func isConsolePage(r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		return false
	}
	return r.URL.Path == "/" || strings.HasPrefix(r.URL.Path, "/ui/")
}

func isWrite(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// authorize checks the bearer token of a request (bearer.Token: in
// constant time, neither the token's bytes nor its length leak through
// timing).
func (s *Server) authorize(r *http.Request) (int, string) {
	if s.cfg.Token == "" {
		return 0, ""
	}
	token, found := bearer.Parse(r.Header.Get("Authorization"))
	if !found {
		return http.StatusUnauthorized, "this server requires a token for everything but the console's pages; send the header \"Authorization: Bearer <token>\" with turnlog serve's token: the one in its data directory's auth/http.token, or the one it was given (TURNLOG_TOKEN or --token)"
	}
	if !s.token.Match(token) {
		return http.StatusUnauthorized, "the bearer token is wrong; use turnlog serve's token: the one in its data directory's auth/http.token, or the one it was given (TURNLOG_TOKEN or --token)"
	}
	return 0, ""
}

// CrossSite returns why a request that a browser may have sent on behalf
// of another site, or that is addressed to a host name this server does
// not answer (DNS rebinding), is refused, or "": the checks every route
// of the API passes, for other handlers on the same listener (the
// recording gateway's routes on serve's).
func (s *Server) CrossSite(r *http.Request) string { return s.crossSite(r) }

// crossSite returns why a request that a browser may have sent on behalf of
// another site is refused, or "".
func (s *Server) crossSite(r *http.Request) string {
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		if err != nil || !strings.EqualFold(u.Host, r.Host) {
			return fmt.Sprintf("cross-origin request from %q refused; call the API from its own origin or from a non-browser client", origin)
		}
	}
	if !s.allowedHost(r.Host) {
		return fmt.Sprintf("host %q refused: the API answers only requests addressed to localhost, an IP address or a name given to turnlog serve with --allowed-hosts (a page from another site that resolves its own name to this machine must not reach it)", r.Host)
	}
	if isWrite(r.Method) {
		switch site := r.Header.Get("Sec-Fetch-Site"); site {
		case "", "same-origin", "none":
		default:
			return fmt.Sprintf("write refused: the browser says a page of another site sent it (Sec-Fetch-Site: %s); change things from the console of this server, or from a non-browser client", site)
		}
	}
	return ""
}

// allowedHost reports whether a request addressed to hostport (the Host
// header) may be served.
func (s *Server) allowedHost(hostport string) bool {
	if localHost(hostport) {
		return true
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(host, ".")
	for _, allowed := range s.cfg.AllowedHosts {
		if strings.EqualFold(host, strings.TrimSuffix(allowed, ".")) {
			return true
		}
	}
	return false
}

// localHost reports whether the Host header names localhost or an IP
// address, which a DNS-rebinding attack (a hostile name resolving to this
// machine) cannot produce.
func localHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	return strings.EqualFold(host, "localhost") || net.ParseIP(host) != nil
}
