package calls

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestSameArgumentsOnlyWhereTheirJSONSaysAll: tool call arguments written
// again by another JSON writer are the same call; arguments that differ
// in what the canonical form of JSON leaves out (an integer's digits past
// 2^53, a name given twice, a lone surrogate) are not, since the model
// reads the text.
func TestSameArgumentsOnlyWhereTheirJSONSaysAll(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		same       bool
	}{
		{name: "spacing", a: `{"city": "Paris"}`, b: `{"city":"Paris"}`, same: true},
		{name: "member order", a: `{"a":1,"b":2}`, b: `{"b":2,"a":1}`, same: true},
		{name: "a number written otherwise", a: `{"n":1.0,"x":0.10,"e":1e2}`, b: `{"n":1,"x":0.1,"e":100}`, same: true},
		{name: "an integer past 2^53 written again", a: `{"id": 1234567890123456789}`, b: `{"id":1234567890123456789}`, same: true},
		{name: "an integer past 2^53 changed", a: `{"id":1234567890123456789}`, b: `{"id":1234567890123456788}`},
		{name: "an integer past 2^53 read as a double (JSON.parse)", a: `{"id":1234567890123456789}`, b: `{"id":1234567890123456800}`, same: true},
		{name: "another integer past 2^53 where the model wrote the double", a: `{"id":1234567890123456800}`, b: `{"id":1234567890123456788}`},
		{name: "a decimal past a double's digits read as a double", a: `{"x":0.12345678901234567891}`, b: `{"x":0.12345678901234568}`, same: true},
		{name: "a decimal past a double's digits changed", a: `{"x":0.12345678901234567891}`, b: `{"x":0.12345678901234567892}`},
		{name: "a number too small for a double read as one", a: `{"x":1e-400}`, b: `{"x":0}`, same: true},
		{name: "a number too small for a double edited", a: `{"x":1e-400}`, b: `{"x":1e-300}`},
		{name: "a name given twice, sent back once", a: `{"path":"x","path":"a.txt"}`, b: `{"path":"a.txt"}`},
		{name: "a lone surrogate read as U+FFFD (Go.s encoding/json)", a: `{"s":"\ud800","id":1}`, b: `{"id":1,"s":"\ufffd"}`, same: true},
		{name: "invalid UTF-8 read as U+FFFD", a: "{\"s\":\"\xff\"}", b: `{"s":"\ufffd"}`, same: true},
		{name: "a long string of digits is no number", a: `{"s":"12345678901234567890"}`, b: `{"s":"12345678901234567800"}`},
		{name: "a name given twice", a: `{"path":"a.txt"}`, b: `{"path":"/etc/passwd","path":"a.txt"}`},
		{name: "a name given twice, written again", a: `{"path":"x","path":"a.txt"}`, b: `{"path":"x","path":"a.txt"}`, same: true},
		{name: "a lone surrogate", a: `{"s":"\ud800"}`, b: `{"s":"\ud801"}`},
		{name: "edited", a: `{"path":"a.txt"}`, b: `{"path":"b.txt"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.same, sameArguments(tc.a, tc.b), "%s and %s", tc.a, tc.b)
		})
	}
}
