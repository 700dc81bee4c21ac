package events

// EncodeReflect is encodeReflect for the external tests, which can use
// internal/eventgen (it imports this package).
var EncodeReflect = encodeReflect
