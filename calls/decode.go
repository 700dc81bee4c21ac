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
	"strings"
)

// errFallback says the text is one encoding/json reads in a way of its
// own: the caller reads it with encoding/json instead.
var errFallback = errors.New("read by encoding/json")

// knownMembers finds the members of an object that are among names.
type knownMembers struct {
	names []string
	seen  uint32
}

// index returns which of the names name is (-1: none), or errFallback
// for a name seen before or one that matches only when case is ignored.
func (k *knownMembers) index(name string) (int, error) {
	for i, n := range k.names {
		if name == n {
			if k.seen&(1<<i) != 0 {
				return -1, errFallback
			}
			k.seen |= 1 << i
			return i, nil
		}
	}
	for _, n := range k.names {
		if strings.EqualFold(name, n) {
			return -1, errFallback
		}
	}
	return -1, nil
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
	members, err := splitObject(raw)
	if err != nil {
		return err
	}
	known := knownMembers{names: []string{"role", "content", "tool_call_id", "tool_calls"}}
	for _, mb := range members {
		k, err := known.index(mb.name)
		if err != nil {
			return err
		}
		switch k {
		case 0:
			m.Role, err = stringMember("role", mb.raw)
		case 1:
			m.Content = json.RawMessage(mb.raw)
		case 2:
			m.ToolCallID, err = stringMember("tool_call_id", mb.raw)
		case 3:
			err = json.Unmarshal(mb.raw, &m.ToolCalls)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// chatResponse is what ParseResponse reads of a Chat Completions response.
type chatResponse struct {
	ID           string
	Model        string
	HasChoice    bool            // choices holds at least one (null too)
	Message      json.RawMessage // the first choice's
	FinishReason string
	Usage        *usage
	Error        *apiError
}

// decodeChatResponse reads a Chat Completions response (valid JSON) as
// encoding/json would into ParseResponse's struct, or fails as
// decodeChatMessage does.
func decodeChatResponse(body []byte, r *chatResponse) error {
	members, err := splitObject(body)
	if err != nil {
		return err
	}
	known := knownMembers{names: []string{"id", "model", "choices", "usage", "error"}}
	for _, mb := range members {
		k, err := known.index(mb.name)
		if err != nil {
			return err
		}
		switch k {
		case 0:
			r.ID, err = stringMember("id", mb.raw)
		case 1:
			r.Model, err = stringMember("model", mb.raw)
		case 2:
			err = decodeFirstChoice(mb.raw, r)
		case 3:
			err = json.Unmarshal(mb.raw, &r.Usage)
		case 4:
			err = json.Unmarshal(mb.raw, &r.Error)
		}
		if err != nil {
			return err
		}
	}
	return nil
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
		if string(c) == "null" {
			continue
		}
		members, err := splitObject(c)
		if err != nil {
			return fmt.Errorf("choices[%d]: %w", i, err)
		}
		var msg json.RawMessage
		var finish string
		known := knownMembers{names: []string{"message", "finish_reason"}}
		for _, mb := range members {
			k, err := known.index(mb.name)
			if err != nil {
				return err
			}
			switch k {
			case 0:
				msg = json.RawMessage(mb.raw)
			case 1:
				if finish, err = stringMember("finish_reason", mb.raw); err != nil {
					return err
				}
			}
		}
		if i == 0 {
			r.Message, r.FinishReason = msg, finish
		}
	}
	return nil
}
