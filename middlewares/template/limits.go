package template

import (
	"errors"
	"fmt"
)

// DefaultMaxPromptBytes caps a rendered prompt, and the values of the
// variables a template names, when [Env.MaxPromptBytes] is unset. A prompt
// is sent at the start of every conversation: far beyond this it crowds out
// the conversation, and a template that repeats a file thousands of times
// must not cost gigabytes of memory per request.
const DefaultMaxPromptBytes int64 = 256 << 10

// ErrTooLarge marks a rendering stopped at a byte cap; callers branch on it
// with errors.Is (the HTTP API answers 400). The error is a [*LimitError].
var ErrTooLarge = errors.New("template: byte cap reached")

// LimitError says which cap a rendering reached and where, so the operator
// can fix the template or raise the cap.
type LimitError struct {
	// Prompt is true when the rendered prompt reached the cap, false when
	// the values of the template's variables did (while resolving them).
	Prompt bool
	// Limit is the cap, in bytes.
	Limit int64
	// At is the tag, as written in the template ("[file:big.txt]"), being
	// written or resolved when the cap was reached; "" when it was the
	// template's own text.
	At string
}

func (e *LimitError) Error() string {
	at := "in the template's own text"
	if e.At != "" {
		at = "at " + e.At
	}
	if e.Prompt {
		return fmt.Sprintf("the rendered system prompt reaches its cap of %d bytes %s; shorten the template or what it includes, or raise the cap", e.Limit, at)
	}
	return fmt.Sprintf("the values of the template's variables reach the prompt cap of %d bytes %s (each variable the template names counts once, even in a branch not taken); shorten the template or what it includes, or raise the cap", e.Limit, at)
}

// Is makes errors.Is(err, ErrTooLarge) true.
func (e *LimitError) Is(target error) bool { return target == ErrTooLarge }
