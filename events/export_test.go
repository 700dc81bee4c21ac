package events

// EncodeReflect is encodeReflect for the external tests, which can use
// internal/eventgen (it imports this package).
func EncodeReflect(evs ...Event) ([]byte, error) { return encodeReflect(evs...) }

// DecodeReflect is Decode by msgpack reflection only, the reference the
// hand-written decoder is held to.
func DecodeReflect(data []byte) ([]Event, error) { return catalog.decodeReflect(data) }

// DecodeFast is the hand-written decoder alone: ok is false when it left
// the message to reflection.
func DecodeFast(data []byte) ([]Event, bool) { return catalog.decodeFast(data, false) }

// DecodePayloadHand is the hand-written decoder of like's payload type
// alone, on a payload's bytes: no canonical form, no validation. known is
// false when like is not a catalog type; ok, when the decoder did not read
// the whole of raw.
func DecodePayloadHand(like Payload, raw []byte) (p Payload, ok, known bool) {
	rd := newReader(raw)
	p, ok, known = decodeHand(like, &rd)
	return p, ok && rd.left() == 0, known
}
