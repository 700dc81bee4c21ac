//go:build unix

package template

import "syscall"

// openFlags open a file: variable without blocking (a FIFO opened for
// reading would wait for a writer) and without making a terminal the
// worker's controlling terminal.
const openFlags = syscall.O_NONBLOCK | syscall.O_NOCTTY
