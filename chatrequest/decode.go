package chatrequest

// This file holds how a request's JSON is read: by hand for the bodies
// clients send, by encoding/json for anything else.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// decode fills r from data as a json.Decoder that disallows unknown fields
// does, and says what is wrong with data. The requests clients send take
// decodePlain, which reads them at a fifth of the decoder's cost; anything
// it does not take (escapes, other types, keys in other case, an error)
// goes through the decoder, whose partial results and first error (in
// document order) are what a request's failure has always reported.
func decode(data []byte, r *Request) error {
	if decodePlain(data, r) {
		return nil
	}
	*r = Request{}
	return decodeWithDecoder(data, r)
}

// decodeWithDecoder is how every request was read before decodePlain:
// FuzzDecodeMatchesDecoder holds decode to it.
func decodeWithDecoder(data []byte, r *Request) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(r); err != nil {
		return fmt.Errorf("malformed request: %v; send JSON like {\"text\": \"hello\"}", err)
	}
	if dec.More() {
		return errors.New("malformed request: more than one JSON value")
	}
	return nil
}

// decodePlain decodes data into r if it is a plain request: one JSON
// object, then only white space, whose keys are Request's as its tags spell
// them, each at most once, with string values (data: an object of string
// values, each key at most once) that hold no escape, no control character
// and only valid UTF-8. encoding/json decodes such a body into exactly
// these strings, so the result is the decoder's; it reports false, having
// maybe filled part of r, for anything else.
func decodePlain(data []byte, r *Request) bool {
	p := plainReader{data: data}
	seen := 0
	ok := p.object(func(key string) bool {
		var bit int
		var dst *string
		switch key {
		case "conversation":
			bit, dst = 1, &r.Conversation
		case "request_id":
			bit, dst = 2, &r.RequestID
		case "text":
			bit, dst = 4, &r.Text
		case "profile":
			bit, dst = 8, &r.Profile
		case "model":
			bit, dst = 16, &r.Model
		case "data":
			bit = 32
		default:
			return false
		}
		if seen&bit != 0 {
			return false
		}
		seen |= bit
		if dst != nil {
			v, ok := p.str()
			*dst = v
			return ok
		}
		r.Data = map[string]string{}
		return p.object(func(k string) bool {
			if _, dup := r.Data[k]; dup {
				return false
			}
			v, ok := p.str()
			r.Data[k] = v
			return ok
		})
	})
	p.space()
	return ok && p.i == len(data)
}

// plainReader reads the plain JSON decodePlain takes.
type plainReader struct {
	data []byte
	i    int
}

func (p *plainReader) space() {
	for p.i < len(p.data) {
		switch p.data[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

// object reads an object, calling value with each key when the reader is
// at the key's value.
func (p *plainReader) object(value func(key string) bool) bool {
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != '{' {
		return false
	}
	p.i++
	p.space()
	if p.i < len(p.data) && p.data[p.i] == '}' {
		p.i++
		return true
	}
	for {
		key, ok := p.str()
		if !ok {
			return false
		}
		p.space()
		if p.i >= len(p.data) || p.data[p.i] != ':' {
			return false
		}
		p.i++
		if !value(key) {
			return false
		}
		p.space()
		if p.i >= len(p.data) {
			return false
		}
		switch p.data[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// str reads a string without escapes, control characters or invalid
// UTF-8.
func (p *plainReader) str() (string, bool) {
	p.space()
	if p.i >= len(p.data) || p.data[p.i] != '"' {
		return "", false
	}
	start := p.i + 1
	for j := start; j < len(p.data); j++ {
		switch c := p.data[j]; {
		case c == '"':
			s := p.data[start:j]
			p.i = j + 1
			return string(s), utf8.Valid(s)
		case c == '\\' || c < ' ':
			return "", false
		}
	}
	return "", false
}
