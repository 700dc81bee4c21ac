package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/turnlog/turnlog/engine"
)

// ErrNoModel is returned by Infer when neither Config.Model nor Input.Model
// names a model: every Messages request must name one.
var ErrNoModel = errors.New("no model")

// APIError is an error the server reported, as an HTTP status or as an
// error event inside a stream, with the server's own explanation. It holds
// no request, so it cannot leak the API key; errors.As finds it behind the
// engine.Transient mark.
type APIError struct {
	// StatusCode is the HTTP status; for an error event inside a 200 OK
	// stream it is 0 and InStream is true.
	StatusCode int
	// Type is the API's error type, e.g. "overloaded_error".
	Type string
	// Message is the server's explanation, with the API key redacted.
	Message string
	// RequestID is the server's request-id header, for support requests.
	RequestID string
	// InStream is true when the error arrived as an event in the stream.
	InStream bool
}

// Error says what the server said and, for what a user can fix, what to check.
func (e *APIError) Error() string {
	var b strings.Builder
	if e.InStream {
		b.WriteString("error event in stream")
	} else {
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" " + t)
		}
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	if e.Type != "" {
		fmt.Fprintf(&b, " (type %s)", e.Type)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " (request-id %s)", e.RequestID)
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		fmt.Fprintf(&b, "; check the API key (%s, or the variable the profile's api_key_env names)", EnvAPIKey)
	case http.StatusNotFound:
		fmt.Fprintf(&b, "; check the model name and that the base URL is the API root without /v1, e.g. %s", DefaultBaseURL)
	}
	return b.String()
}

// transient reports whether a retry may cure e.
func (e *APIError) transient() bool {
	switch e.StatusCode {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return true
	}
	if e.StatusCode >= 500 {
		return true // 529 is Anthropic's "overloaded"
	}
	switch e.Type {
	case "overloaded_error", "api_error", "rate_limit_error", "timeout_error":
		return true
	}
	return false
}

const (
	maxErrorBody    = 64 << 10
	maxErrorMessage = 500
)

// classify turns an SDK error into turnlog's terms: an *APIError marked
// engine.Transient when a retry may cure it, network failures transient, a
// cancelled ctx returned as is.
func (e *Engine) classify(ctx context.Context, err error, resp *http.Response) error {
	if ctx.Err() != nil {
		return err
	}
	var sdkErr *sdk.Error
	if errors.As(err, &sdkErr) {
		apiErr := &APIError{StatusCode: sdkErr.StatusCode, RequestID: sdkErr.RequestID}
		body := []byte(sdkErr.RawJSON())
		if len(body) == 0 && sdkErr.Response != nil && sdkErr.Response.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(sdkErr.Response.Body, maxErrorBody))
		}
		if apiErr.StatusCode == http.StatusOK {
			apiErr.StatusCode, apiErr.InStream = 0, true
		}
		e.parseErrorBody(apiErr, body)
		if apiErr.transient() {
			return engine.Transient(apiErr)
		}
		return apiErr
	}
	if resp != nil && resp.StatusCode >= 400 {
		apiErr := &APIError{StatusCode: resp.StatusCode, RequestID: resp.Header.Get("request-id")}
		if resp.Body != nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			e.parseErrorBody(apiErr, body)
		}
		if apiErr.transient() {
			return engine.Transient(apiErr)
		}
		return apiErr
	}
	var netErr net.Error
	if errors.As(err, &netErr) || errors.Is(err, io.ErrUnexpectedEOF) {
		return engine.Transient(err)
	}
	return err
}

// parseErrorBody reads the API's error body, {"type":"error","error":
// {"type","message"}}, falling back to the body's text.
func (e *Engine) parseErrorBody(apiErr *APIError, body []byte) {
	var doc struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &doc) == nil {
		apiErr.Type = doc.Error.Type
		apiErr.Message = doc.Error.Message
		if apiErr.Message == "" {
			apiErr.Message = doc.Message
		}
	}
	if apiErr.Message == "" {
		apiErr.Message = strings.TrimSpace(string(body))
	}
	msg := strings.Join(strings.Fields(e.redact(apiErr.Message)), " ")
	if len(msg) > maxErrorMessage {
		n := maxErrorMessage
		for n > 0 && msg[n]&0xC0 == 0x80 {
			n--
		}
		msg = msg[:n] + "…"
	}
	apiErr.Message = msg
}

// redact removes the API key from text that came from the server.
func (e *Engine) redact(s string) string {
	if e.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, e.apiKey, "[redacted]")
}
