package worker

import (
	"time"

	"github.com/turnlog/turnlog/chatrequest"
)

// Request is a chat request as published on turnlog.chat.<conversation>
// (see chatrequest.Request).
type Request = chatrequest.Request

// DefaultMaxTextBytes bounds a request's text.
const DefaultMaxTextBytes = chatrequest.DefaultMaxTextBytes

// parseRequest is chatrequest.Parse.
func parseRequest(data []byte, conversation string, seq uint64, at time.Time, maxText int) (Request, string) {
	return chatrequest.Parse(data, conversation, seq, at, maxText)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
