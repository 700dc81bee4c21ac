package worker_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/internal/natstest"
	"github.com/turnlog/turnlog/worker"
)

// TestDeltasComeBeforeTheirStep: a live client that appends the deltas it
// receives shows the answer the log records, and gets all of that text
// before the step that records it, so it never has to take back text it
// showed after the request completed. The worker coalesces deltas; what
// the client sees joined must be the same.
func TestDeltasComeBeforeTheirStep(t *testing.T) {
	srv := natstest.Start(t)
	l := startWorker(t, srv, nil)
	nc, err := srv.Connect()
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	// One connection, one channel: the server sends a connection its
	// messages in the order it routed them.
	seen := make(chan *nats.Msg, 1024)
	for _, subject := range []string{l.Names().DeltaSubject("live"), l.Names().EventsRoleSubject("live", l.WriterRole())} {
		sub, err := nc.ChanSubscribe(subject, seen)
		require.NoError(t, err)
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	require.NoError(t, nc.Flush())

	text := "please echo these seven words back"
	res, err := ask(t, l, "live", text)
	require.NoError(t, err)
	require.Equal(t, "You said: "+text, res.Answer)

	var streamed strings.Builder
	deltas := 0
	steps := map[int]bool{}
	var answerStep int
	timeout := time.After(30 * time.Second)
	for {
		var m *nats.Msg
		select {
		case m = <-seen:
		case <-timeout:
			t.Fatalf("request.completed never came by; streamed so far: %q", streamed.String())
		}
		if m.Subject == l.Names().DeltaSubject("live") {
			var d worker.Delta
			require.NoError(t, json.Unmarshal(m.Data, &d))
			if d.Kind == events.KindLLMText {
				streamed.WriteString(d.Text)
				deltas++
				steps[d.Step] = true
			}
			continue
		}
		evs, err := events.Decode(m.Data)
		require.NoError(t, err)
		for _, e := range evs {
			if e.Type == events.TypeLLMTextAppended {
				answerStep = e.Step
			}
		}
		if evs[len(evs)-1].Type == events.TypeRequestCompleted {
			break
		}
	}
	assert.Positive(t, answerStep)
	assert.Equal(t, map[int]bool{answerStep: true}, steps, "every delta names the step its text is stored in")
	assert.Equal(t, res.Answer, streamed.String(), "the answer's deltas, joined, all before the step that records it")
	assert.Positive(t, deltas)
}
