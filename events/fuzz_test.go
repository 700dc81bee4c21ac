package events_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/turnlog/turnlog/events"
)

// FuzzDecode feeds Decode arbitrary bytes. Decode must never panic, must
// reject with one of its documented sentinels, and a message it accepts
// must be a fixed point of the codec: re-encoding the events and decoding
// them again gives the same events.
func FuzzDecode(f *testing.F) {
	addDecodeSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		checkDecode(t, data)
	})
}

// addDecodeSeeds adds the decoder fuzz targets' seeds: a message of each
// type, one of all types, and malformed ones.
func addDecodeSeeds(f *testing.F) {
	var all []events.Event
	for _, p := range samplePayloads() {
		e := newEvent(p)
		all = append(all, e)
		data, err := events.Encode(e)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	data, err := events.Encode(all...)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(message(f, wire(f, map[string]any{"payload": map[string]any{"block_id": "u", "meta": map[string]any{}}})))
	f.Add(message(f, wire(f, map[string]any{"time": "2025-01-02T03:04:05.123+02:00"})))
	f.Add(message(f, wire(f, map[string]any{"v": 2})))
	f.Add(message(f, wire(f, map[string]any{"type": "nope.happened"})))
	for _, garbage := range [][]byte{
		nil, {0x90}, {0xc0}, {0xc1}, {0x91, 0x80}, {0xdd, 0x80, 0, 0, 0},
		[]byte("hello"), bytes.Repeat([]byte{0x91}, 64),
	} {
		f.Add(garbage)
	}
}

// checkDecode is FuzzDecode's check of one input.
func checkDecode(t *testing.T, data []byte) {
	got, err := events.Decode(data)
	if err != nil {
		if got != nil {
			t.Fatalf("Decode returned events and an error: %v", err)
		}
		if !errors.Is(err, events.ErrInvalid) && !errors.Is(err, events.ErrUnknownEvent) && !errors.Is(err, events.ErrNewerVersion) {
			t.Fatalf("Decode error wraps none of ErrInvalid, ErrUnknownEvent, ErrNewerVersion: %v", err)
		}
		// Decode turns a panic of the msgpack library into an error so
		// that readers survive; here it must still count as a crash.
		if strings.Contains(err.Error(), "panicked") {
			t.Fatal(err)
		}
		return
	}
	if len(got) == 0 {
		t.Fatal("Decode accepted a message without events")
	}
	again, err := events.Encode(got...)
	if err != nil {
		t.Fatalf("Decode accepted events Encode refuses: %v\n%#v", err, got)
	}
	back, err := events.Decode(again)
	if err != nil {
		t.Fatalf("Decode refuses what Encode wrote: %v", err)
	}
	require.Equal(t, got, back, "the round trip changed the events")
}
