package gateway_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPathWithDotOrEmptySegmentsIsNotForwarded: the gateway matched its
// recorded routes on the path as sent, and forwarded every other /v1/
// path unrecorded as it came. A model call to /v1/chat//completions (a
// base URL ending in "/v1/" joined with "/chat/completions"),
// /v1/./chat/completions or /v1/x/../chat/completions went to the
// provider with the managed key and was not recorded, though a provider
// behind a proxy that resolves such paths (nginx, a CDN) answers it as
// the model call it is; /v1/../x left the upstream's /v1. Such a path is
// now answered 404 with what to fix, and nothing is forwarded; a
// trailing slash is still the route.
func TestPathWithDotOrEmptySegmentsIsNotForwarded(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("Hello."))
	r := newRig(t, up.URL, "", managed)
	key := map[string]string{"Authorization": "Bearer " + token}

	for _, tc := range []struct {
		name, path string
	}{
		{name: "empty segment", path: "/v1/chat//completions"},
		{name: "dot segment", path: "/v1/./chat/completions"},
		{name: "dot-dot segment", path: "/v1/x/../chat/completions"},
		{name: "out of /v1", path: "/v1/../admin"},
		{name: "encoded dot-dot", path: "/v1/x/%2e%2e/chat/completions"},
		{name: "encoded slash", path: "/v1/chat%2F%2Fcompletions"},
		{name: "trailing dot", path: "/v1/chat/completions/."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _, _ := r.wire.snapshot()
			req, err := http.NewRequest(http.MethodPost, r.gw.URL+"/", strings.NewReader(fmt.Sprintf(chatBody, "unrecorded?")))
			require.NoError(t, err)
			// As sent, not cleaned by the client.
			req.URL.Opaque = tc.path
			req.Header.Set("Content-Type", "application/json")
			for k, v := range key {
				req.Header.Set(k, v)
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			after, _, _ := r.wire.snapshot()
			assert.Equal(t, len(before), len(after), "forwarded to the provider")
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
			assert.Equal(t, "gateway", resp.Header.Get("Turnlog-Error"))
		})
	}

	// A trailing slash is the route itself, recorded.
	resp, body := post(t, r.gw.URL+"/v1/chat/completions/", key, fmt.Sprintf(chatBody, "recorded"))
	require.Equal(t, http.StatusOK, resp.StatusCode, "%s", body)
	assert.NotEmpty(t, resp.Header.Get("Turnlog-Conversation"))
}
