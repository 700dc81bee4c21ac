// Package events is turnlog's event catalog: the envelope every change to a
// conversation travels in, the typed payload of each event type, the msgpack
// codec and the registry that decodes old schema versions by upcasting them.
//
// The catalog is the contract between every writer and every reader of the
// log, forever: type strings never change once released, and a payload whose
// shape changes gets a new schema version plus an upcaster from the previous
// one, so logs written years ago stay readable.
//
// The package is pure: it does no I/O and knows nothing about NATS.
package events
