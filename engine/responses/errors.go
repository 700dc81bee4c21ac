package responses

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/turnlog/turnlog/engine/openai"
)

// ErrNoModel is returned by Infer when neither Config.Model nor Input.Model
// names a model.
var ErrNoModel = errors.New("no model")

// classify turns an SDK error into an *openai.APIError marked
// engine.Transient when a retry may cure it, exactly as engine/openai does
// for Chat Completions.
func (e *Engine) classify(ctx context.Context, err error, resp *http.Response) error {
	return openai.ClassifyError(ctx, err, resp, e.apiKey)
}

// failure is the error for a response the server ended as failed, or for
// an "error" event in the stream: the code and message it gave, transient
// when the code says the server, not the request, was at fault.
func (e *Engine) failure(code, message string) error {
	if message == "" {
		message = "the server ended the response as failed without a message"
	}
	return openai.StreamFailure(code, message, e.apiKey, transientCode(code))
}

// transientCode reports whether a retry may cure a failure with this code
// (the ResponseError codes of the API; server_error, rate_limit_exceeded,
// vector_store_timeout are the server's, the rest describe the request).
// An empty code is the server's: it gave no reason.
func transientCode(code string) bool {
	switch c := strings.ToLower(code); {
	case c == "":
		return true
	case strings.Contains(c, "server_error"), strings.Contains(c, "rate_limit"),
		strings.Contains(c, "timeout"), strings.Contains(c, "overloaded"), strings.Contains(c, "unavailable"):
		return true
	}
	return false
}

// incompleteStream is the error for a stream that ended before its
// response did: what arrived is not an answer, and a retry may get one.
func incompleteStream(events int) error {
	return fmt.Errorf("the stream ended after %d events without response.completed; the answer is incomplete", events)
}
