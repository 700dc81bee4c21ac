package cli

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/turnlog/turnlog/eventlog"
	"github.com/turnlog/turnlog/events"
	"github.com/turnlog/turnlog/worker"
)

// TestAnswerPrinterSaysAFailedAttemptsTextIsNotTheAnswer: with the retry
// middleware, the text a failed attempt streamed was glued to the retry's
// ("[attempt 1 partial] [attempt 2 partial] final answer") while the log
// stored only the second (found by the library probe). The failed call is
// shown between them.
func TestAnswerPrinterSaysAFailedAttemptsTextIsNotTheAnswer(t *testing.T) {
	var out bytes.Buffer
	p := newAnswerPrinter(&out)
	p.event(eventlog.Record{Event: events.Event{Step: 0, Payload: events.UserAppended{BlockID: "u", Text: "hi"}}})
	p.delta(worker.Delta{Kind: events.KindLLMText, Text: "[attempt 1 partial] ", Step: 1})
	p.event(eventlog.Record{Event: events.Event{Step: 1, Payload: events.InferenceFailed{InferenceID: "i1", Error: "503 busy", Transient: true}}})
	p.delta(worker.Delta{Kind: events.KindLLMText, Text: "final answer", Step: 2})
	p.finish()
	assert.Equal(t, "[attempt 1 partial] \nmodel call failed: 503 busy (the text above is not stored; a retry may follow)\nfinal answer\n", out.String())
}
