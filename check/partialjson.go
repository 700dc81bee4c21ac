package check

// This file holds what an SDK may make of a tool call's arguments cut
// short (the model reached its output limit while it wrote them): the JSON
// as far as the model wrote it, completed. The Anthropic SDKs parse such
// input as far as it goes: some leave out the member the model was
// writing, some keep its string as far as it got. The record keeps what
// the app sends back canonical (keys sorted), so members are compared by
// name, not by place.

import (
	"encoding/json"
	"strings"
)

// partialNode is a value of JSON text cut short. cut marks the value the
// model was writing when it stopped (an SDK may leave it out); prefix, for
// a string cut, is its text as far as it got.
type partialNode struct {
	scalar  json.Token // a whole string, number, bool or nil
	members []partialMember
	elems   []*partialNode
	object  bool
	array   bool
	cut     bool
	prefix  *string
}

// partialMember is a member of an object of JSON text cut short.
type partialMember struct {
	key string
	val *partialNode
}

// add puts v in the container n, under key when n is an object.
func (n *partialNode) add(key string, v *partialNode) {
	if n.object {
		n.members = append(n.members, partialMember{key: key, val: v})
	} else {
		n.elems = append(n.elems, v)
	}
}

// parsePartial reads JSON text cut short into its values, the one being
// written marked cut; ok is false when text is not JSON cut short (whole
// JSON, or a token that is not JSON before its end).
func parsePartial(text string) (root *partialNode, ok bool) {
	if json.Valid([]byte(text)) {
		return nil, false
	}
	d := json.NewDecoder(strings.NewReader(text))
	d.UseNumber()
	var stack []*partialNode
	key, keyPending := "", false // an object's member name read, its value not yet
	var last *partialNode        // the last scalar read
	end := int64(0)
	place := func(v *partialNode) {
		if len(stack) == 0 {
			root = v
			return
		}
		stack[len(stack)-1].add(key, v)
		keyPending = false
	}
	for {
		t, err := d.Token()
		if err != nil {
			break
		}
		end, last = d.InputOffset(), nil
		switch t {
		case json.Delim('{'), json.Delim('['):
			v := &partialNode{object: t == json.Delim('{'), array: t == json.Delim('[')}
			place(v)
			stack = append(stack, v)
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		default:
			if top := len(stack) - 1; top >= 0 && stack[top].object && !keyPending {
				key, keyPending = t.(string), true
				continue
			}
			last = &partialNode{scalar: t}
			place(last)
		}
	}
	if len(stack) == 0 {
		return nil, false // cut before its first token, or after its last
	}
	rest := strings.TrimLeft(text[end:], " \t\r\n,:")
	switch {
	case rest == "" && last != nil:
		// A number at the very end may be cut (12 of 123); a string or
		// a literal there is whole.
		_, number := last.scalar.(json.Number)
		last.cut = number
	case rest == "" && !keyPending:
	case rest != "" && rest[0] == '"':
		s, ok := cutString(rest)
		if !ok {
			return nil, false
		}
		if top := stack[len(stack)-1]; top.array || keyPending {
			top.add(key, &partialNode{cut: true, prefix: &s})
		}
		// else the start of a member's name, which no SDK keeps.
	case rest == "" || strings.Trim(rest, "-+.eE0123456789") == "" || cutLiteral(rest):
		if top := stack[len(stack)-1]; top.array || keyPending {
			top.add(key, &partialNode{cut: true})
		}
	default:
		return nil, false
	}
	return root, true
}

// cutLiteral reports whether rest is the start of true, false or null.
func cutLiteral(rest string) bool {
	for _, lit := range []string{"true", "false", "null"} {
		if strings.HasPrefix(lit, rest) {
			return true
		}
	}
	return false
}

// cutString is the text of the string rest starts, which the cut left
// unterminated, as far as it can be read (an escape cut in its middle, at
// most "\uXXX", left out).
func cutString(rest string) (string, bool) {
	for drop := 0; drop <= 5 && drop < len(rest); drop++ {
		var s string
		if json.Unmarshal([]byte(rest[:len(rest)-drop]+`"`), &s) == nil {
			return s, true
		}
	}
	return "", false
}

// parsedFrom reports whether sent, JSON, is what an SDK may make of cut,
// JSON cut short: every value the model finished as it wrote it, each
// container it opened closed, and the value it was writing left out or,
// a string, kept as far as it got. Another value, a member left out that
// the model had finished, or one added is not.
func parsedFrom(sent, cut string) bool {
	n, ok := parsePartial(cut)
	if !ok {
		return false
	}
	d := json.NewDecoder(strings.NewReader(sent))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return false
	}
	return n.matches(v)
}

// matches reports whether v is what an SDK may make of n.
func (n *partialNode) matches(v any) bool {
	switch {
	case n.cut && n.scalar == nil && n.prefix == nil:
		return false // a value cut before it could be read: left out only
	case n.prefix != nil:
		s, ok := v.(string)
		return ok && strings.HasPrefix(*n.prefix, s)
	case n.object:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		seen := 0
		for _, mem := range n.members {
			got, present := m[mem.key]
			switch {
			case present && !mem.val.matches(got):
				return false
			case present:
				seen++
			case !mem.val.cut:
				return false
			}
		}
		return seen == len(m)
	case n.array:
		a, ok := v.([]any)
		if !ok || len(a) > len(n.elems) {
			return false
		}
		for i, e := range n.elems {
			if i >= len(a) {
				return i == len(n.elems)-1 && e.cut
			}
			if !e.matches(a[i]) {
				return false
			}
		}
		return true
	}
	return sameScalar(n.scalar, v)
}

// sameScalar: the token a and the decoded value b are the same, numbers
// by their value (the record writes 1.0 as 1).
func sameScalar(a json.Token, b any) bool {
	na, aNum := a.(json.Number)
	nb, bNum := b.(json.Number)
	if aNum && bNum {
		if na == nb {
			return true
		}
		fa, errA := na.Float64()
		fb, errB := nb.Float64()
		return errA == nil && errB == nil && fa == fb
	}
	return !aNum && !bNum && a == b
}
