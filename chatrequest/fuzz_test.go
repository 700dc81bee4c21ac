package chatrequest

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"
)

// FuzzParse feeds the chat request parser arbitrary bytes, as any
// NATS client can publish them on turnlog.chat.<conversation>. Whatever the
// body, parsing must not panic, the request must belong to the subject's
// conversation and carry a valid ULID (its failure is recorded under it),
// the result must not depend on anything but the input, and a request
// accepted (no problem) must satisfy every documented bound; a problem is
// one line that says what was wrong.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"text": "hello"}`,
		`{"text": "hi", "conversation": "c-1", "request_id": "01HZX3Y8N2Q4R5S6T7V8W9X0YZ", "profile": "default", "model": "m", "data": {"cwd": "/src", "tz": "Europe/Paris"}}`,
		`{"text": "hi", "conversation": "other"}`,
		`{"text": "hi", "request_id": "nope"}`,
		`{"text": ""}`,
		`{"txt": "hi"}`,
		`{"text": "hi"} {"text": "again"}`,
		`{"text": "hi", "data": {"": "x"}}`,
		`{"text": "hi", "data": null}`,
		`{"text": "\ud800"}`,
		`{"text": 1}`,
		`[]`,
		`null`,
		``,
		"{\"text\": \"hi\"}\n",
		`{"text": "hi", "request_id": ""}`,
	} {
		f.Add([]byte(seed))
	}
	const (
		conv    = "c-1"
		seq     = 42
		maxText = 64
	)
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, problem := Parse(data, conv, seq, at, maxText)
		again, againProblem := Parse(data, conv, seq, at, maxText)
		if problem != againProblem || r.RequestID != again.RequestID || r.Text != again.Text {
			t.Fatalf("parsing is not deterministic: %q/%q then %q/%q", r.RequestID, problem, again.RequestID, againProblem)
		}
		if r.Conversation != conv {
			t.Fatalf("the request belongs to %q, not the subject's conversation %q", r.Conversation, conv)
		}
		if _, err := ulid.ParseStrict(r.RequestID); err != nil {
			t.Fatalf("request ID %q is not a ULID (problem %q): %v", r.RequestID, problem, err)
		}
		if problem != "" {
			if strings.Contains(problem, "\n") || !utf8.ValidString(problem) {
				t.Fatalf("the problem is not one line of text: %q", problem)
			}
			return
		}
		switch {
		case r.Text == "":
			t.Fatal("accepted a request without text")
		case len(r.Text) > maxText:
			t.Fatalf("accepted %d bytes of text, the limit is %d", len(r.Text), maxText)
		}
		for k, v := range r.Data {
			if k == "" || len(k) > 256 || len(v) > maxText {
				t.Fatalf("accepted data key %q (%d bytes) with a value of %d bytes", k, len(k), len(v))
			}
		}
	})
}
