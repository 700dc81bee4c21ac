package eventlog

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestParseAck(t *testing.T) {
	tests := []struct {
		name string
		data string
		want pubAck
		ok   bool
	}{
		{name: "stored", data: `{"stream":"TURNLOG_EVENTS","seq":42}`, want: pubAck{Stream: "TURNLOG_EVENTS", Sequence: 42}, ok: true},
		{name: "duplicate as the server writes it", data: `{"stream":"TURNLOG_EVENTS","seq":7,"duplicate": true}`, want: pubAck{Stream: "TURNLOG_EVENTS", Sequence: 7, Duplicate: true}, ok: true},
		{name: "duplicate without the space", data: `{"stream":"TURNLOG_EVENTS","seq":7,"duplicate":true}`, want: pubAck{Stream: "TURNLOG_EVENTS", Sequence: 7, Duplicate: true}, ok: true},
		{name: "largest sequence", data: `{"stream":"TURNLOG_EVENTS","seq":18446744073709551615}`, ok: false},
		{name: "19 digits", data: `{"stream":"TURNLOG_EVENTS","seq":9999999999999999999}`, want: pubAck{Stream: "TURNLOG_EVENTS", Sequence: 9999999999999999999}, ok: true},
		{name: "another stream", data: `{"stream":"OTHER","seq":42}`},
		{name: "a longer stream name", data: `{"stream":"TURNLOG_EVENTS2","seq":42}`},
		{name: "with a domain", data: `{"stream":"TURNLOG_EVENTS","domain":"hub","seq":42}`},
		{name: "an error", data: `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"TURNLOG_EVENTS","seq":0}`},
		{name: "batch fields", data: `{"stream":"TURNLOG_EVENTS","seq":42,"batch":"b","count":2}`},
		{name: "sequence zero", data: `{"stream":"TURNLOG_EVENTS","seq":0}`},
		{name: "leading zero", data: `{"stream":"TURNLOG_EVENTS","seq":042}`},
		{name: "no sequence", data: `{"stream":"TURNLOG_EVENTS","seq":}`},
		{name: "truncated", data: `{"stream":"TURNLOG_EVENTS","seq":42`},
		{name: "trailing bytes", data: `{"stream":"TURNLOG_EVENTS","seq":42}x`},
		{name: "empty", data: ``},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseAck([]byte(tc.data), "TURNLOG_EVENTS")
			assert.Equal(t, tc.ok, ok)
			if tc.ok {
				assert.Equal(t, tc.want, got)
			}
		})
	}
}

// FuzzParseAck checks that the hand parser never disagrees with JSON: what
// it accepts decodes to the same acknowledgement.
func FuzzParseAck(f *testing.F) {
	f.Add([]byte(`{"stream":"S","seq":42}`))
	f.Add([]byte(`{"stream":"S","seq":7,"duplicate": true}`))
	f.Add([]byte(`{"stream":"S","seq":01000000}`)) // not JSON: a leading zero
	f.Add([]byte(`{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"S","seq":0}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, ok := parseAck(data, "S")
		if !ok {
			return
		}
		var want struct {
			Error any `json:"error"`
			pubAck
		}
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("parseAck accepted %q, which is not JSON: %v", data, err)
		}
		if want.Error != nil || got != want.pubAck {
			t.Fatalf("parseAck(%q) = %+v, JSON says %+v", data, got, want)
		}
	})
}
