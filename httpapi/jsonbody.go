package httpapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
)

// writeJSON writes v as the response body with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// errorBody is every error response.
type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, errorBody{Error: msg})
}

// decodeBody decodes the request body into v: exactly one JSON value with
// no unknown field. On failure it has answered (400 or 413) and returns
// false.
func decodeBody(w http.ResponseWriter, r *http.Request, v any, example string) bool {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		// Read to the end: trailing data is an error, and so is a body that
		// goes on past the limit after a valid value.
		var extra json.RawMessage
		if err = dec.Decode(&extra); err == io.EOF {
			return true
		} else if err == nil {
			err = errors.New("more than one JSON value")
		}
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the body is larger than %d bytes; send less", tooLarge.Limit))
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "the body is empty; send JSON like "+example)
	default:
		writeError(w, http.StatusBadRequest, fmt.Sprintf("malformed body: %v; send JSON like %s", err, example))
	}
	return false
}

// jsonErrorWriter turns the mux's plain-text error answers into JSON ones.
type jsonErrorWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *jsonErrorWriter) WriteHeader(code int) {
	if w.wrote {
		return
	}
	w.wrote = true
	msg := http.StatusText(code)
	switch code {
	case http.StatusNotFound:
		msg = "no such route; see the API routes in docs/http-api.md"
	case http.StatusMethodNotAllowed:
		msg = "method not allowed here; the allowed methods are " + w.Header().Get("Allow")
	}
	writeError(w.ResponseWriter, code, msg)
}

func (w *jsonErrorWriter) Write(p []byte) (int, error) {
	if !w.wrote {
		w.WriteHeader(http.StatusOK)
	}
	return len(p), nil // the mux's text is replaced by the JSON
}
