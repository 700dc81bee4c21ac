package engine

import (
	"fmt"
	"runtime/debug"
)

// PanicError is a panic of a middleware or an engine, recovered by Loop.Run
// or by the chain's model call and returned as an error, so that one faulty
// request ends failed (with a record saying so) instead of taking down the
// process that serves every other, and a queue that hands the request out
// again does not take it down again.
type PanicError struct {
	// Value is what was passed to panic.
	Value any
	// Stack is the panicking goroutine's stack, for the operator's log;
	// it is not recorded in the conversation.
	Stack []byte
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v", e.Value) }

// recovered turns a recovered panic value into *PanicError (nil stays nil).
func recovered(p any) error {
	if p == nil {
		return nil
	}
	return &PanicError{Value: p, Stack: debug.Stack()}
}
