// Package bearer checks turnlog's tokens where an HTTP request presents
// them: the HTTP API, the recording gateway and the metrics listeners of
// serve and worker all compare a token here, one way, in constant time.
package bearer

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// Token is a token a listener requires, kept as its SHA-256 digest so
// that Match compares digests of equal length: neither the token's bytes
// nor its length leak through timing.
type Token struct {
	digest [sha256.Size]byte
	set    bool
}

// NewToken returns the Token that matches token; the zero Token (and the
// Token of "") matches nothing.
func NewToken(token string) Token {
	if token == "" {
		return Token{}
	}
	return Token{digest: sha256.Sum256([]byte(token)), set: true}
}

// Match reports, in constant time, whether presented is the token.
func (t Token) Match(presented string) bool {
	got := sha256.Sum256([]byte(presented))
	return subtle.ConstantTimeCompare(got[:], t.digest[:]) == 1 && t.set
}

// Parse returns the token of an Authorization header's value
// ("Bearer <token>", the scheme in any case, the token trimmed), and
// false when the value holds no bearer token.
func Parse(authorization string) (string, bool) {
	scheme, token, found := strings.Cut(authorization, " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// Require serves next only to requests whose Authorization header is
// "Bearer <t's token>", and answers every other request 401 with a
// one-line plain-text body that says what is missing and where the token
// comes from (source, e.g. "the worker's TURNLOG_METRICS_TOKEN or
// --metrics-token-file"), and nothing of next's. It is for listeners whose
// every path needs the token, such as serve's and worker's --metrics.
func Require(t Token, source string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token, ok := Parse(r.Header.Get("Authorization"))
		switch {
		case !ok:
			refuse(w, "this listener needs a token: send the header \"Authorization: Bearer <token>\" with "+source)
		case !t.Match(token):
			refuse(w, "the bearer token is wrong: send "+source)
		default:
			next.ServeHTTP(w, r)
		}
	})
}

func refuse(w http.ResponseWriter, msg string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="turnlog"`)
	w.Header().Set("Cache-Control", "no-store")
	http.Error(w, msg, http.StatusUnauthorized)
}
