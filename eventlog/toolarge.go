package eventlog

import "fmt"

// TooLargeError says how large a step refused as too large was, and how
// large a message the server takes: a writer that can leave part of a
// step out (a call's other choices) knows from it how much. It matches
// ErrTooLarge with errors.Is.
type TooLargeError struct {
	Conversation string
	// Size is the step's encoded size in bytes; Max is the most the server
	// accepts per message (its max_payload, less 1 KiB for headers).
	Size, Max int
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("append to %s: %v: %d bytes encoded, the server accepts %d per message (its max_payload, less 1 KiB for headers)",
		e.Conversation, ErrTooLarge, e.Size, e.Max)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *TooLargeError) Is(target error) bool { return target == ErrTooLarge }
