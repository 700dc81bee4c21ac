package check

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestParsedFrom: the arguments an SDK may make of a tool call's
// arguments cut short, and the edits it never makes.
func TestParsedFrom(t *testing.T) {
	for _, tc := range []struct {
		name, cut, sent string
		want            bool
	}{
		{name: "string cut left out", cut: `{"path": "a.txt", "content": "hel`, sent: `{"path":"a.txt"}`, want: true},
		{name: "string cut kept", cut: `{"path": "a.txt", "content": "hel`, sent: `{"content":"hel","path":"a.txt"}`, want: true},
		{name: "string cut kept shorter", cut: `{"path": "a.txt", "content": "hel`, sent: `{"content":"he","path":"a.txt"}`, want: true},
		{name: "string cut written on", cut: `{"path": "a.txt", "content": "hel`, sent: `{"content":"hello","path":"a.txt"}`},
		{name: "finished member changed", cut: `{"path": "a.txt", "content": "hel`, sent: `{"path":"b.txt"}`},
		{name: "finished member left out", cut: `{"path": "a.txt", "content": "hel`, sent: `{}`},
		{name: "member added", cut: `{"path": "a.txt", "content": "hel`, sent: `{"mode":1,"path":"a.txt"}`},
		{name: "key cut", cut: `{"path": "a.txt", "cont`, sent: `{"path":"a.txt"}`, want: true},
		{name: "key without value", cut: `{"path": "a.txt", "content": `, sent: `{"path":"a.txt"}`, want: true},
		{name: "number maybe cut, kept", cut: `{"n": 12`, sent: `{"n":12}`, want: true},
		{name: "number maybe cut, left out", cut: `{"n": 12`, sent: `{}`, want: true},
		{name: "number changed", cut: `{"n": 12`, sent: `{"n":13}`},
		{name: "number as the record writes it", cut: `{"n": 1.0, "s": "x`, sent: `{"n":1}`, want: true},
		{name: "nested", cut: `{"a": {"b": [1, 2], "c": ["x", "y`, sent: `{"a":{"b":[1,2],"c":["x","y"]}}`, want: true},
		{name: "nested element left out", cut: `{"a": {"b": [1, 2], "c": ["x", "y`, sent: `{"a":{"b":[1,2],"c":["x"]}}`, want: true},
		{name: "nested finished element left out", cut: `{"a": {"b": [1, 2], "c": ["x", "y`, sent: `{"a":{"b":[1,2],"c":[]}}`},
		{name: "array closed by the model", cut: `{"a": [1, 2], "b": "x`, sent: `{"a":[1]}`},
		{name: "literal cut", cut: `{"a": 1, "b": tr`, sent: `{"a":1}`, want: true},
		{name: "literal cut completed", cut: `{"a": 1, "b": tr`, sent: `{"a":1,"b":true}`},
		{name: "open object kept empty", cut: `{"a": {`, sent: `{"a":{}}`, want: true},
		{name: "escape cut", cut: `{"a": "x\u00`, sent: `{"a":"x"}`, want: true},
		{name: "not cut short", cut: `{"a": 1} x`, sent: `{"a":1}`},
		{name: "whole JSON", cut: `{"a": 1}`, sent: `{"a":1}`},
		{name: "sent not JSON", cut: `{"a": "x`, sent: `{"a": "x`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, parsedFrom(tc.sent, tc.cut))
		})
	}
}

// FuzzParsedFrom: any text taken for arguments cut short, and any text
// sent back for them, is judged without a panic.
func FuzzParsedFrom(f *testing.F) {
	f.Add(`{"path": "a.txt", "lines": [1, 2], "content": "hel`, `{"lines":[1,2],"path":"a.txt"}`)
	f.Add(`{"a": {"b": [1, 2], "c": ["x", "y`, `{"a":{"b":[1,2],"c":["x"]}}`)
	f.Add(`[{"a": tr`, `[{}]`)
	f.Fuzz(func(t *testing.T, cut, sent string) {
		_ = parsedFrom(sent, cut)
		_, _ = parsePartial(cut)
	})
}
