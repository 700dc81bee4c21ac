package gateway_test

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/gateway"
	"github.com/turnlog/turnlog/internal/syncbuf"
)

// TestACallWhoseHistoryMatchesNoCallIsSaid: an app that trims the
// answers it re-sends, keeps a sliding window or re-serialises tool
// arguments sends history that begins with no recorded call's state, so
// each of its calls starts a conversation of its own. Nothing said so: an
// adopter saw one chat become many conversations in ls, with no log line
// and no metric. Such a call (a new conversation whose input holds what a
// model wrote) is counted under threading="unmatched" and logged with
// the remedy, the Turnlog-Conversation header.
func TestACallWhoseHistoryMatchesNoCallIsSaid(t *testing.T) {
	up := newFixedUpstream(t, chatAnswer("The answer. "))
	m := gateway.NewMetrics()
	var logged syncbuf.Buffer
	r := newRig(t, up.URL, "", func(c *gateway.Config) {
		c.Metrics = m
		c.Logger = slog.New(slog.NewTextHandler(&logged, nil))
	})
	call := chatCaller(t)
	first := call(r.gw, `{"role":"user","content":"hi"}`)
	same := call(r.gw, `{"role":"user","content":"hi"},{"role":"assistant","content":"The answer. "},{"role":"user","content":"more"}`)
	assert.Equal(t, first, same, "the answer re-sent as it came continues the chat")
	assert.NotContains(t, logged.String(), "matches no recorded call")

	trimmed := call(r.gw, `{"role":"user","content":"hi"},{"role":"assistant","content":"The answer."},{"role":"user","content":"more"}`)
	assert.NotEqual(t, first, trimmed, "a trimmed answer matches no recorded state: a new conversation")

	metrics := scrape(t, m)
	for _, want := range []string{
		`turnlog_gateway_threading_total{api="chat.completions",threading="new"} 1`,
		`turnlog_gateway_threading_total{api="chat.completions",threading="inferred"} 1`,
		`turnlog_gateway_threading_total{api="chat.completions",threading="unmatched"} 1`,
	} {
		assert.Contains(t, metrics, want)
	}
	line := logged.String()
	assert.Contains(t, line, "matches no recorded call")
	assert.Contains(t, line, trimmed)
	assert.Contains(t, line, "Turnlog-Conversation")
	assert.Equal(t, 1, bytes.Count([]byte(line), []byte("matches no recorded call")))
}
