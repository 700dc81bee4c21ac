package chatrequest

import (
	"fmt"
	"reflect"
	"testing"
)

var decodeSeeds = []string{
	`{"text": "hello"}`,
	`{"conversation":"tp1-42","request_id":"01KB0Q0ZK3V2J6A5X9C8B7D6E5","text":"message 7"}`,
	`{"text": "hi", "conversation": "c-1", "request_id": "01HZX3Y8N2Q4R5S6T7V8W9X0YZ", "profile": "default", "model": "m", "data": {"cwd": "/src", "tz": "Europe/Paris"}}`,
	` {"text":"hi"} ` + "\n\t\r",
	`{"text": "hi", "data": {}}`,
	`{"text": "hi", "data": null}`,
	`{"text": null}`,
	`{"text": "a\nb"}`,
	`{"text": "tab	inside"}`,
	`{"text": "\u00e9t\u00e9"}`,
	`{"text": "été ☕"}`,
	"{\"text\": \"\xff\"}",
	`{"Text": "hi"}`,
	`{"TEXT": "hi"}`,
	`{"te\u0078t": "hi"}`,
	`{"text": "one", "text": "two"}`,
	`{"text": "hi", "data": {"a": "1", "a": "2"}}`,
	`{"text": "hi", "data": {"a": "1"}, "data": {"b": "2"}}`,
	`{"text": "hi", "data": {"a": 1}}`,
	`{"text": "hi", "data": {"a": {"b": "c"}}}`,
	`{"text": 1}`,
	`{"text": "hi", "extra": true}`,
	`{"extra": [1, {"x": "]"}], "text": "hi"}`,
	`{"text": "hi"} {"text": "again"}`,
	`{"text": "hi"}]`,
	`{"text": "hi"}}`,
	`{"text": "hi",}`,
	`{"text" "hi"}`,
	`{"text": "hi"`,
	`{}`,
	`[]`,
	`null`,
	`"text"`,
	``,
	"\ufeff{\"text\": \"hi\"}",
	`{"request_id": "01HZX3Y8N2Q4R5S6T7V8W9X0YZ", "text": 5}`,
}

// FuzzDecodeMatchesDecoder: decode gives what the json.Decoder it replaced
// gives, for any body: the same request, partial fields included, and the
// same error.
func FuzzDecodeMatchesDecoder(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var got, want Request
		gotErr, wantErr := decode(data, &got), decodeWithDecoder(data, &want)
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("%q: error %v, the decoder's %v", data, gotErr, wantErr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: decoded %#v, the decoder %#v", data, got, want)
		}
	})
}

// TestPlainRequestsTakeTheFastPath: the bodies clients send, the nats CLI
// and `turnlog chat` included, are read by decodePlain, not handed to the
// decoder; so BenchmarkParse measures the path they take.
func TestPlainRequestsTakeTheFastPath(t *testing.T) {
	for _, body := range decodeSeeds[:5] {
		var r Request
		if !decodePlain([]byte(body), &r) {
			t.Errorf("%s: not taken by decodePlain", body)
		}
	}
	for _, body := range []string{`{"Text": "hi"}`, `{"text": "a\nb"}`, `{"text": "one", "text": "two"}`, `{"text": "hi"}]`, `{"text": 1}`} {
		var r Request
		if decodePlain([]byte(body), &r) {
			t.Errorf("%s: taken by decodePlain, which must leave it to the decoder", body)
		}
	}
}
