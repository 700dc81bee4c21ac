package events

import (
	"bytes"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"
	"github.com/vmihailenco/msgpack/v5"
)

// wireOut is the struct Encode used to encode by msgpack's reflection:
// the definition of the envelope's bytes, which appendEnvelope writes by
// hand. It and encodeReflect are kept, unchanged, as the reference the
// hand-written encoder is held to.
type wireOut struct {
	ID           ulid.ULID `msgpack:"id"`
	Conversation string    `msgpack:"conv"`
	Type         Type      `msgpack:"type"`
	Version      int       `msgpack:"v"`
	Time         time.Time `msgpack:"time"`
	Cause        string    `msgpack:"cause"`
	Step         int       `msgpack:"step"`
	Actor        string    `msgpack:"actor"`
	Payload      Payload   `msgpack:"payload"`
}

// encodeReflect is Encode as it was before the envelope was written by
// hand, with the default catalog.
func encodeReflect(evs ...Event) ([]byte, error) {
	r := catalog
	if len(evs) == 0 {
		return nil, fmt.Errorf("encode: %w: no events", ErrInvalid)
	}
	buf := bufPool.Get().(*bytes.Buffer)
	defer bufPool.Put(buf)
	buf.Reset()
	enc := msgpack.GetEncoder()
	defer msgpack.PutEncoder(enc)
	enc.Reset(buf)
	if err := enc.EncodeArrayLen(len(evs)); err != nil {
		return nil, err
	}
	for i, e := range evs {
		if err := e.Validate(); err != nil {
			return nil, fmt.Errorf("encode event %d (%s): %w", i, e.Type, err)
		}
		if cur := r.current(e.Type); cur == 0 {
			return nil, fmt.Errorf("encode event %d: %w %q", i, ErrUnknownEvent, e.Type)
		} else if e.Version != cur {
			return nil, fmt.Errorf("encode event %d (%s): version %d, but writers must use the current version %d", i, e.Type, e.Version, cur)
		}
		w := wireOut{e.ID, e.Conversation, e.Type, e.Version, e.Time.UTC(), e.Cause, e.Step, e.Actor, e.Payload}
		if err := enc.Encode(&w); err != nil {
			return nil, fmt.Errorf("encode event %d (%s): %w", i, e.Type, err)
		}
	}
	return bytes.Clone(buf.Bytes()), nil
}
