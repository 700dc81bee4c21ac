package bearer_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/internal/bearer"
)

func TestRequire(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "turnlog_requests_total 1\n") })
	h := bearer.Require(bearer.NewToken("s3cret"), "the test's token", next)
	for _, tc := range []struct {
		name   string
		auth   []string
		status int
		says   string
	}{
		{name: "no header", status: http.StatusUnauthorized, says: `this listener needs a token: send the header "Authorization: Bearer <token>" with the test's token`},
		{name: "another scheme", auth: []string{"Basic s3cret"}, status: http.StatusUnauthorized, says: "needs a token"},
		{name: "bearer without a token", auth: []string{"Bearer "}, status: http.StatusUnauthorized, says: "needs a token"},
		{name: "a wrong token", auth: []string{"Bearer s3cre"}, status: http.StatusUnauthorized, says: "the bearer token is wrong: send the test's token"},
		{name: "the token with more after it", auth: []string{"Bearer s3cret2"}, status: http.StatusUnauthorized, says: "wrong"},
		{name: "the token", auth: []string{"Bearer s3cret"}, status: http.StatusOK, says: "turnlog_requests_total"},
		{name: "the scheme in lower case, spaces around", auth: []string{"bearer  s3cret "}, status: http.StatusOK, says: "turnlog_requests_total"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			for _, v := range tc.auth {
				r.Header.Add("Authorization", v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			assert.Equal(t, tc.status, w.Code)
			assert.Contains(t, w.Body.String(), tc.says)
			if tc.status != http.StatusOK {
				assert.NotContains(t, w.Body.String(), "turnlog_", "nothing of the handler's")
				assert.Equal(t, `Bearer realm="turnlog"`, w.Header().Get("WWW-Authenticate"))
				assert.Contains(t, w.Header().Get("Content-Type"), "text/plain")
			}
		})
	}
}

func TestTheEmptyTokenMatchesNothing(t *testing.T) {
	assert.False(t, bearer.NewToken("").Match(""))
	assert.False(t, bearer.Token{}.Match(""))
	assert.True(t, bearer.NewToken("x").Match("x"))
	assert.False(t, bearer.NewToken("x").Match("X"))
}
