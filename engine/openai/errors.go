package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"

	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/turnlog/turnlog/engine"
)

// ErrNoModel is returned by Infer when neither Config.Model nor Input.Model
// names a model: every Chat Completions request must name one.
var ErrNoModel = errors.New("no model")

// APIError is an error the server reported, as an HTTP status or as an
// error event in the middle of a stream. It carries the server's own
// message, because "400 Bad Request" alone does not say which field was
// wrong; errors.As finds it behind the engine.Transient mark. It holds no
// request, so it cannot leak the API key.
type APIError struct {
	// StatusCode is the HTTP status, or, for an error event inside a
	// stream, the code the event carried (llama.cpp sends one), else 0.
	StatusCode int
	// Type and Code are the server's classification, when it gives one
	// (OpenAI: "invalid_request_error", "rate_limit_exceeded").
	Type, Code string
	// Message is the server's explanation, with the API key redacted.
	Message string
	// InStream is true when the error arrived as an event inside a 200 OK
	// stream.
	InStream bool
}

// Error says what the server said, and for the statuses a user can fix,
// what to check.
func (e *APIError) Error() string {
	var b strings.Builder
	switch {
	case e.InStream && e.StatusCode != 0:
		fmt.Fprintf(&b, "error event in stream (code %d)", e.StatusCode)
	case e.InStream:
		b.WriteString("error event in stream")
	default:
		fmt.Fprintf(&b, "HTTP %d", e.StatusCode)
		if t := http.StatusText(e.StatusCode); t != "" {
			b.WriteString(" " + t)
		}
	}
	if e.Message != "" {
		b.WriteString(": " + e.Message)
	}
	switch {
	case e.Type != "" && e.Code != "":
		fmt.Fprintf(&b, " (type %s, code %s)", e.Type, e.Code)
	case e.Type != "":
		fmt.Fprintf(&b, " (type %s)", e.Type)
	case e.Code != "":
		fmt.Fprintf(&b, " (code %s)", e.Code)
	}
	switch e.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		fmt.Fprintf(&b, "; check the API key (%s)", EnvAPIKey)
	case http.StatusNotFound:
		fmt.Fprintf(&b, "; check the model name (%s) and that the base URL (%s) is the API root, e.g. http://host:port/v1", EnvModel, EnvBaseURL)
	}
	return b.String()
}

// transientStatus reports whether a retry may cure an HTTP status: a
// timeout, a conflict, a rate limit or a server-side failure.
func transientStatus(code int) bool {
	return code == http.StatusRequestTimeout || code == http.StatusConflict ||
		code == http.StatusTooManyRequests || code >= 500
}

// classify turns an SDK error into turnlog's terms: an *APIError for what
// the server said, marked engine.Transient when a retry may cure it (408,
// 409, 429, 5xx, network failures and timeouts). resp is the HTTP response
// when one arrived. A cancelled or expired ctx is returned as is, never
// transient: the caller has given up, a retry would too.
func (e *Engine) classify(ctx context.Context, err error, resp *http.Response) error {
	if ctx.Err() != nil {
		return err
	}
	if resp != nil && resp.StatusCode >= 400 {
		apiErr := e.apiError(resp)
		if transientStatus(apiErr.StatusCode) {
			return engine.Transient(apiErr)
		}
		return apiErr
	}
	var streamErr *ssestream.StreamError
	if errors.As(err, &streamErr) {
		apiErr := &APIError{InStream: true}
		e.parseErrorBody(apiErr, streamErr.Event.Data)
		if streamErrorTransient(apiErr) {
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

// streamErrorTransient decides for an error event inside a stream. The
// HTTP status was 200, so only the event tells: a status-like code when
// the server sends one, else the error type. Request errors (bad input,
// bad key, missing model) are permanent; anything else (OpenAI's
// server_error, an overloaded backend) is worth a retry.
func streamErrorTransient(e *APIError) bool {
	if e.StatusCode >= 400 {
		return transientStatus(e.StatusCode)
	}
	t := strings.ToLower(e.Type + " " + e.Code)
	for _, permanent := range []string{"invalid_request", "authentication", "invalid_api_key", "permission", "not_found", "model_not_found"} {
		if strings.Contains(t, permanent) {
			return false
		}
	}
	return true
}

// maxErrorBody bounds how much of an error body is read and kept: enough
// for any real explanation, not enough for a proxy's HTML page to flood a
// log.
const (
	maxErrorBody    = 64 << 10
	maxErrorMessage = 500
)

// apiError reads resp's status and body. The SDK has already read the body
// and put a copy back, so reading it here is safe.
func (e *Engine) apiError(resp *http.Response) *APIError {
	apiErr := &APIError{StatusCode: resp.StatusCode}
	if resp.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		e.parseErrorBody(apiErr, body)
	}
	return apiErr
}

// parseErrorBody fills Message, Type and Code from the error bodies
// OpenAI-compatible servers send:
//
//	{"error": {"message", "type", "code"}}   OpenAI, Ollama /v1, llama.cpp
//	{"error": "text"}                         Ollama native, many proxies
//	{"message", "type", "code"}               vLLM
//	{"detail": "text"}                        FastAPI-based servers
//
// and falls back to the body's text.
func (e *Engine) parseErrorBody(apiErr *APIError, body []byte) {
	var doc map[string]json.RawMessage
	if json.Unmarshal(body, &doc) == nil {
		obj := doc
		if raw, ok := doc["error"]; ok {
			var s string
			if json.Unmarshal(raw, &s) == nil {
				obj = map[string]json.RawMessage{"message": raw}
			} else {
				var inner map[string]json.RawMessage
				if json.Unmarshal(raw, &inner) == nil {
					obj = inner
				}
			}
		}
		apiErr.Message = jsonText(obj["message"])
		if apiErr.Message == "" {
			apiErr.Message = jsonText(obj["detail"])
		}
		apiErr.Type = jsonText(obj["type"])
		code := jsonText(obj["code"])
		var n int
		if _, err := fmt.Sscanf(code, "%d", &n); err == nil && fmt.Sprint(n) == code {
			if apiErr.StatusCode == 0 {
				apiErr.StatusCode = n
			}
		} else {
			apiErr.Code = code
		}
	}
	if apiErr.Message == "" {
		apiErr.Message = strings.TrimSpace(string(body))
	}
	apiErr.Message = truncate(strings.Join(strings.Fields(e.redact(apiErr.Message)), " "), maxErrorMessage)
}

// jsonText returns a JSON string's value, a number's or other scalar's
// text, or "" for null and absent values.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// redact removes the API key from text that came from the server: some
// servers echo the credential they rejected.
func (e *Engine) redact(s string) string {
	if e.apiKey == "" {
		return s
	}
	return strings.ReplaceAll(s, e.apiKey, "[redacted]")
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && n < len(s) && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// ClassifyError is the error classification of Engine for other engines
// that call OpenAI endpoints with the same SDK (engine/responses): an
// *APIError with the server's message (apiKey redacted), marked
// engine.Transient when a retry may cure it (408, 409, 429, 5xx, error
// events of the server's own making, network failures). resp is the HTTP
// response when one arrived; a cancelled ctx returns err unchanged.
func ClassifyError(ctx context.Context, err error, resp *http.Response, apiKey string) error {
	return (&Engine{apiKey: apiKey}).classify(ctx, err, resp)
}

// StreamFailure is the error for a failure a server reported inside a 200 OK
// event stream as a code and a message rather than an HTTP status (the
// Responses API's "error" event and failed response): an *APIError with
// InStream set and apiKey redacted from the message, marked
// engine.Transient when transient is true. The caller decides, since only
// it knows its API's codes.
func StreamFailure(code, message, apiKey string, transient bool) error {
	e := &Engine{apiKey: apiKey}
	apiErr := &APIError{InStream: true, Code: code}
	apiErr.Message = truncate(strings.Join(strings.Fields(e.redact(message)), " "), maxErrorMessage)
	if transient {
		return engine.Transient(apiErr)
	}
	return apiErr
}
