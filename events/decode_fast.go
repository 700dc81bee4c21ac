package events

// The hand-written decoder: Decode's path for the messages turnlog writes.
// msgpack's reflection (decodeReflect) spent ~4 µs per one-event message,
// 10-20 times the cost of applying the event; loads, catch-up, replay and
// --verify all decode.
//
// It is equivalent to decodeReflect by construction rather than by care:
// it accepts only the forms Encode (and the reflection encoder before it)
// writes, and returns ok only when the whole message decoded and every
// event validated. Anything else (another key order, an unknown or
// repeated key, a string sent as bin, a float for an int, an old version
// to upcast, a type of another registry, any error at all) makes it give
// up, and Decode hands the message to decodeReflect, which gives the
// answer, or the error, it always gave. What it does accept, it must
// decode exactly as reflection would: TestDecodeMatchesReflection and
// FuzzDecodeMatchesReflection hold the two equal, and fail when a message
// Encode writes is not taken by this path (a field without its line in
// payload_decode.go).
//
// It needs no checkStructure walk: it reads every byte of the message
// itself, checks each length against the bytes left before it allocates,
// and the catalog's structure nests 6 levels at most.

// decodeFast decodes a message written as Encode writes it. ok is false
// when the message is anything else, including invalid.
func (r *Registry) decodeFast(data []byte, owned bool) (evs []Event, ok bool) {
	var rd reader
	if owned {
		rd = newOwningReader(data)
	} else {
		rd = newReader(data)
	}
	n, ok := rd.arrayLen()
	if !ok || n == 0 || n > rd.left()/minEventBytes {
		return nil, false // a count no valid message has must not size an allocation
	}
	out := make([]Event, n)
	for i := range out {
		if !r.decodeEventFast(&rd, &out[i]) {
			return nil, false
		}
	}
	if rd.left() != 0 {
		return nil, false
	}
	return out, true
}

// minEventBytes is the size of the smallest valid event as Encode writes
// it: the map header and the 9 keys (45 bytes), a 16-byte ID (18), a
// 32-bit time (6), one-byte version and step, one-character conversation,
// type, cause and actor (2 each) and an empty payload map (1).
const minEventBytes = 80

// decodeEventFast reads one envelope, with its 9 keys in Encode's order
// (see appendEnvelope), and its payload into e, and validates e.
func (r *Registry) decodeEventFast(rd *reader, e *Event) bool {
	if c, ok := rd.code(); !ok || c != 0x80|9 {
		return false
	}
	if !rd.key(keyID) || rd.left() < 18 || rd.b[rd.off] != 0xc4 || rd.b[rd.off+1] != 16 {
		return false
	}
	copy(e.ID[:], rd.b[rd.off+2:rd.off+18])
	rd.off += 18
	var ok bool
	if !rd.key(keyConv) || !readString(rd, &e.Conversation) || !rd.key(keyType) {
		return false
	}
	// The type's string is the registry's, not a slice of the message.
	start, end, ok := rd.strSpan()
	if !ok {
		return false
	}
	en := r.lookup(Type(rd.s[start:end]))
	if en == nil || !en.hand {
		return false // unknown, or another registry's: reflection
	}
	e.Type = en.typ
	if !rd.key(keyVersion) || !readInt(rd, &e.Version) || e.Version != en.current {
		return false // older versions are upcast by the registry
	}
	if !rd.key(keyTime) {
		return false
	}
	if e.Time, ok = rd.time(); !ok {
		return false
	}
	if !rd.key(keyCause) || !readString(rd, &e.Cause) ||
		!rd.key(keyStep) || !readInt(rd, &e.Step) ||
		!rd.key(keyActor) || !readString(rd, &e.Actor) ||
		!rd.key(keyPayload) {
		return false
	}
	p, ok, _ := decodeHand(en.zero, rd)
	if !ok {
		return false
	}
	e.Payload = canonical(p)
	return e.Validate() == nil
}

// key consumes k, a key with its header as the envelope's constants hold
// it, and reports whether it was next.
func (r *reader) key(k string) bool {
	if r.left() < len(k) || r.s[r.off:r.off+len(k)] != k {
		return false
	}
	r.off += len(k)
	return true
}
