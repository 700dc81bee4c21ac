package calls

// Reading the few members the gateway needs from a chat message and a
// Chat Completions response without encoding/json: a response's message
// was decoded three times over (the body, the message, its content), each
// time validated first, on the path between the upstream's last byte and
// the client's. The members are found by the splitting scanner (split.go),
// which finds where values end but does not check the values it skips: a
// response is validated first (json.Valid), and a request's item is
// canonicalised after it is read (Canonical refuses what is not JSON).
// Strings are read by Canonical's own string reader, so what is read is
// what encoding/json would read. What encoding/json reads in ways of its own (a member whose
// name differs from a known one only in case, which it matches; a known
// member given twice, whose values it merges) sends the caller back to
// encoding/json, as does any error: encoding/json says what is wrong.

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// errFallback says the text is one encoding/json reads in a way of its
// own: the caller reads it with encoding/json instead.
var errFallback = errors.New("read by encoding/json")

// eachKnown calls fn with the index in names and the value of each member
// of the object b whose name is one of names, in order. It returns
// errFallback for a name given twice or one that matches only when case
// is ignored, and the first error of splitting b or of fn.
func eachKnown(b []byte, names []string, fn func(k int, raw []byte) error) error {
	members, err := splitObject(b)
	if err != nil {
		return err
	}
	var seen uint32
	for _, mb := range members {
		k := slices.Index(names, mb.name)
		switch {
		case k >= 0 && seen&(1<<k) != 0:
			return errFallback
		case k >= 0:
			seen |= 1 << k
			if err := fn(k, mb.raw); err != nil {
				return err
			}
		case slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(mb.name, n) }):
			return errFallback
		}
	}
	return nil
}

// stringMember reads a string member's value as encoding/json reads it
// into a string field: null is "".
func stringMember(name string, raw []byte) (string, error) {
	if len(raw) == 4 && string(raw) == "null" {
		return "", nil
	}
	if len(raw) == 0 || raw[0] != '"' {
		return "", fmt.Errorf("%s is not a string", name)
	}
	s := canonScanner{b: raw}
	str, err := s.str()
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if s.i != len(raw) {
		return "", fmt.Errorf("%s is not a string", name)
	}
	return str, nil
}

// decodeChatMessage reads a chat message (valid JSON) as
// json.Unmarshal(raw, m) would, or fails (errFallback, or any error: the
// caller then asks encoding/json).
func decodeChatMessage(raw []byte, m *chatMessage) error {
	return eachKnown(raw, []string{"role", "content", "tool_call_id", "tool_calls", "name", "function_call", "refusal", "audio"}, func(k int, v []byte) (err error) {
		switch k {
		case 0:
			m.Role, err = stringMember("role", v)
		case 1:
			m.Content = json.RawMessage(v)
		case 2:
			m.ToolCallID, err = stringMember("tool_call_id", v)
		case 3:
			err = json.Unmarshal(v, &m.ToolCalls)
		case 4:
			m.Name, err = stringMember("name", v)
		case 5:
			err = json.Unmarshal(v, &m.FunctionCall)
		case 6:
			err = json.Unmarshal(v, &m.Refusal)
		case 7:
			err = json.Unmarshal(v, &m.Audio)
		}
		return err
	})
}

// chatResponse is what ParseResponse reads of a Chat Completions response.
type chatResponse struct {
	ID           string
	Model        string
	HasChoice    bool            // choices holds at least one (null too)
	Message      json.RawMessage // the first choice's
	FinishReason string
	Logprobs     json.RawMessage   // the first choice's, as written
	Others       []json.RawMessage // the choices after the first, as written
	Usage        *usage
	Error        *apiError
}

// decodeChatResponse reads a Chat Completions response (valid JSON) as
// encoding/json would into ParseResponse's struct, or fails as
// decodeChatMessage does.
func decodeChatResponse(body []byte, r *chatResponse) error {
	return eachKnown(body, []string{"id", "model", "choices", "usage", "error"}, func(k int, v []byte) (err error) {
		switch k {
		case 0:
			r.ID, err = stringMember("id", v)
		case 1:
			r.Model, err = stringMember("model", v)
		case 2:
			err = decodeFirstChoice(v, r)
		case 3:
			err = json.Unmarshal(v, &r.Usage)
		case 4:
			err = json.Unmarshal(v, &r.Error)
		}
		return err
	})
}

// decodeFirstChoice reads the choices member: the first choice's message
// and finish reason (null: none). Every choice is read, as encoding/json
// reads them, so that one it would refuse is refused.
func decodeFirstChoice(raw []byte, r *chatResponse) error {
	if string(raw) == "null" {
		return nil
	}
	choices, err := splitArray(raw)
	if err != nil {
		return fmt.Errorf("choices: %w", err)
	}
	r.HasChoice = len(choices) > 0
	for i, c := range choices {
		if i > 0 {
			r.Others = append(r.Others, json.RawMessage(c))
		}
		if string(c) == "null" {
			continue
		}
		var msg, logprobs json.RawMessage
		var finish string
		err := eachKnown(c, []string{"message", "finish_reason", "logprobs"}, func(k int, v []byte) (err error) {
			switch k {
			case 0:
				msg = json.RawMessage(v)
			case 1:
				finish, err = stringMember("finish_reason", v)
			case 2:
				logprobs = json.RawMessage(v)
			}
			return err
		})
		if err != nil {
			return fmt.Errorf("choices[%d]: %w", i, err)
		}
		if i == 0 {
			r.Message, r.FinishReason, r.Logprobs = msg, finish, logprobs
		}
	}
	return nil
}
