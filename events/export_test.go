package events

// EncodeReflect is encodeReflect for the external tests, which can use
// internal/eventgen (it imports this package).
func EncodeReflect(evs ...Event) ([]byte, error) { return encodeReflect(evs...) }
