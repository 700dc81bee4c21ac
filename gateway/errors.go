package gateway

import (
	"encoding/json"
	"net/http"
)

// ErrorHeader marks an error the gateway answered itself (its value is
// "gateway"), so that an app, or the person reading its logs, tells
// turnlog's 401 (its token) from the provider's (the provider's key),
// which reaches the app without it, as the provider sent it.
const ErrorHeader = "Turnlog-Error"

// writeError answers in the error shape of the API the client speaks, so
// that its SDK raises its own error type with the message.
func writeError(w http.ResponseWriter, anthropic bool, status int, message string) {
	w.Header().Set(ErrorHeader, "gateway")
	var body any
	if anthropic {
		typ := map[int]string{401: "authentication_error", 403: "permission_error", 404: "not_found_error", 413: "request_too_large", 503: "overloaded_error", 502: "api_error", 400: "invalid_request_error"}[status]
		if typ == "" {
			typ = "api_error"
		}
		body = map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message}}
	} else {
		typ := map[int]string{401: "invalid_request_error", 403: "permission_error", 404: "invalid_request_error", 413: "invalid_request_error", 503: "service_unavailable", 502: "upstream_error", 504: "upstream_error", 400: "invalid_request_error"}[status]
		code := map[int]any{401: "invalid_api_key", 413: "request_too_large"}[status]
		body = map[string]any{"error": map[string]any{"message": message, "type": typ, "param": nil, "code": code}}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}
