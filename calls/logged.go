package calls

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/turnlog/turnlog/events"
)

// Logged is a call as a log of calls holds it: one line of import --calls'
// JSON lines, or one call the gateway's spool kept while NATS was away.
//
//	{"api": "chat.completions"|"responses"|"messages", "time": RFC 3339,
//	 "conversation": optional, "request": {...}, "response": {...}}
//
// "response" may also be a string: a stream's server-sent events as the
// provider sent them. The spool writes more members, which a file may
// hold too: "call_id", "threading", "status" (the upstream's HTTP status,
// default 200), "failure" and "transient" (how the call failed),
// "duration_ms", "request_base64" for a body that was not JSON, and
// "account" (the OpenAI-Organization and OpenAI-Project headers).
type Logged struct {
	API          API
	Time         time.Time
	Conversation string
	// Request is the request body's exact bytes (its wire hash is theirs).
	Request []byte
	// Response is the response body: JSON, or, when Stream, the stream's
	// text. Nil: the call had no response (it failed before).
	Response []byte
	Stream   bool
	// Compact: the call was made to the compaction route (CompactPath;
	// "compact": true in the line), recorded as Call.Compact.
	Compact bool
	// Headers are the call's recorded headers (RecordedHeaders; any other
	// member of the line's "headers" is left out, credentials among them).
	Headers map[string]string
	// Account is the OpenAI-Organization and OpenAI-Project headers the
	// call named (the spool writes them: not recorded, but the gateway
	// asks about a background response in the call's organization and
	// project).
	Account map[string][]string
	// The members the spool writes (see above).
	CallID    string
	Threading string
	Status    int
	Failure   string
	Transient bool
	Duration  time.Duration
}

type loggedJSON struct {
	API           string              `json:"api"`
	Time          string              `json:"time"`
	Conversation  string              `json:"conversation,omitempty"`
	Request       json.RawMessage     `json:"request,omitempty"`
	RequestBase64 string              `json:"request_base64,omitempty"`
	Response      json.RawMessage     `json:"response,omitempty"`
	Compact       bool                `json:"compact,omitempty"`
	Headers       map[string]string   `json:"headers,omitempty"`
	CallID        string              `json:"call_id,omitempty"`
	Threading     string              `json:"threading,omitempty"`
	Status        int                 `json:"status,omitempty"`
	Failure       string              `json:"failure,omitempty"`
	Transient     bool                `json:"transient,omitempty"`
	DurationMS    float64             `json:"duration_ms,omitempty"`
	Account       map[string][]string `json:"account,omitempty"`
}

// ParseLogged reads one logged call and checks what a recording needs:
// the API's name, the time, a conversation ID that can be one, a request.
// The request and response themselves are read when the call is
// recorded (see Logged.Outcome, ParseRequest).
func ParseLogged(line []byte) (*Logged, error) {
	var j loggedJSON
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("not a logged call (a JSON object with api, time, request, response): %w", err)
	}
	if dec.More() {
		return nil, errors.New("more than one JSON value: give one call per line")
	}
	if j.API == "" {
		return nil, fmt.Errorf(`"api" is missing: use %s, %s or %s`, ChatCompletions, Responses, Messages)
	}
	api, err := ParseAPI(j.API)
	if err != nil {
		return nil, err
	}
	if j.Compact && api != Responses {
		return nil, fmt.Errorf(`"compact" is for the %s API's compaction, not %s`, Responses, api)
	}
	l := &Logged{API: api, Compact: j.Compact, Headers: recordedOnly(j.Headers), Conversation: j.Conversation, CallID: j.CallID, Threading: j.Threading, Status: j.Status,
		Failure: j.Failure, Transient: j.Transient, Duration: time.Duration(j.DurationMS * float64(time.Millisecond)), Account: j.Account}
	if j.Time == "" {
		return nil, errors.New(`"time" is missing: give when the call was made, in RFC 3339 (2025-01-31T12:00:00Z)`)
	}
	if l.Time, err = time.Parse(time.RFC3339Nano, j.Time); err != nil {
		return nil, fmt.Errorf(`"time" %q is not RFC 3339 (2025-01-31T12:00:00Z)`, j.Time)
	}
	if l.Conversation != "" {
		if err := events.ValidateConversationID(l.Conversation); err != nil {
			return nil, fmt.Errorf(`"conversation": %w`, err)
		}
	}
	switch {
	case j.RequestBase64 != "":
		if l.Request, err = base64.StdEncoding.DecodeString(j.RequestBase64); err != nil {
			return nil, fmt.Errorf(`"request_base64": %w`, err)
		}
	case len(j.Request) > 0 && !bytes.Equal(j.Request, []byte("null")):
		l.Request = j.Request
	default:
		return nil, errors.New(`"request" is missing: give the request body the call sent, as a JSON object`)
	}
	if len(j.Response) > 0 && !bytes.Equal(j.Response, []byte("null")) {
		if j.Response[0] == '"' {
			var s string
			if err := json.Unmarshal(j.Response, &s); err != nil {
				return nil, fmt.Errorf(`"response": %w`, err)
			}
			l.Response, l.Stream = []byte(s), true
		} else {
			l.Response = j.Response
		}
	}
	if l.Response == nil && l.Failure == "" {
		return nil, errors.New(`"response" is missing: give the response body the call got, as a JSON object (or a stream's text as a string)`)
	}
	return l, nil
}

// Outcome reads the logged response into how the call ended.
func (l *Logged) Outcome() Outcome {
	o := Outcome{Failure: l.Failure, Transient: l.Transient, Duration: l.Duration, Refused: l.Status >= 300}
	if o.Failure != "" {
		if l.Stream && l.Status < 300 && len(l.Response) > 0 {
			// What the stream delivered before it failed (the spool
			// keeps a cut stream's bytes): the record's partial output.
			s := NewStream(l.API, len(l.Response)+1)
			_, _ = s.Write(l.Response)
			if out, err := s.Output(); err == nil {
				o.Output = out
			}
		}
		return o
	}
	if l.Status >= 300 {
		msg := ErrorMessage(l.Response)
		if msg == "" {
			msg = summary(string(l.Response))
		}
		o.Failure = "upstream answered " + strconv.Itoa(l.Status) + ": " + msg
		o.Transient = l.Status == 429 || l.Status >= 500
		return o
	}
	var out *Output
	var err error
	if l.Stream {
		s := NewStream(l.API, len(l.Response)+1)
		_, _ = s.Write(l.Response)
		if out, err = s.Output(); err == nil && !s.Complete() {
			// Cut before its final event, as the gateway records a
			// stream cut live: failed, with what had arrived.
			o.Output, o.Failure = out, "the stream ended before its final event"
			return o
		}
	} else {
		out, err = ParseResponse(l.API, l.Response)
	}
	if err != nil {
		o.Failure = "the response cannot be read: " + err.Error()
		return o
	}
	o.Output = out
	return o
}

// Marshal writes l as one logged call, the request and a JSON response as
// their exact bytes (a request that is not JSON as request_base64): what
// ParseLogged reads back. It holds no newline only if they hold none.
func (l *Logged) Marshal() []byte {
	j := loggedJSON{API: string(l.API), Compact: l.Compact, Headers: l.Headers, Time: l.Time.UTC().Format(time.RFC3339Nano), Conversation: l.Conversation,
		CallID: l.CallID, Threading: l.Threading, Status: l.Status, Failure: l.Failure, Transient: l.Transient,
		DurationMS: float64(l.Duration) / float64(time.Millisecond), Account: l.Account}
	raw := bytes.TrimSpace(l.Request)
	if json.Valid(raw) && len(raw) > 0 && raw[0] == '{' && bytes.Equal(raw, l.Request) {
		j.Request = l.Request
	} else {
		j.RequestBase64 = base64.StdEncoding.EncodeToString(l.Request)
	}
	if l.Response != nil {
		if !l.Stream && json.Valid(l.Response) {
			j.Response = l.Response
		} else {
			s, _ := json.Marshal(string(l.Response))
			j.Response = s
		}
	}
	// json.Marshal would compact the raw members, changing the request's
	// bytes and so its wire hash: write them as they are.
	var b bytes.Buffer
	b.WriteString("{")
	meta, _ := json.Marshal(struct {
		loggedJSON
		Request  json.RawMessage `json:"request,omitempty"`
		Response json.RawMessage `json:"response,omitempty"`
	}{loggedJSON: j})
	b.Write(bytes.TrimSuffix(bytes.TrimPrefix(meta, []byte("{")), []byte("}")))
	if j.Request != nil {
		b.WriteString(`,"request":`)
		b.Write(j.Request)
	}
	if j.Response != nil {
		b.WriteString(`,"response":`)
		b.Write(j.Response)
	}
	b.WriteString("}")
	return b.Bytes()
}
