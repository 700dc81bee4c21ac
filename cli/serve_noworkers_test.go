package cli

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// serve --workers 0 answered no chat request, yet its banner said "0
// workers ready; try: turnlog chat -m hello", and the chat it suggested
// waited for its 2-minute timeout. The banner now says that requests wait
// for a worker, and how to start one against this server.
func TestServeWithoutWorkersSaysRequestsWait(t *testing.T) {
	s := startServe(t, "--workers", "0")
	out := s.out.String()
	assert.NotContains(t, out, "0 workers ready; try: turnlog chat", "suggests no chat that would wait for nobody")
	assert.Contains(t, out, "no workers in this process (--workers 0): chat requests wait until a worker runs")
	assert.Contains(t, out, "try: turnlog worker --nats-url "+s.natsURL, "names how to start one against this server")
}
