// Package syncbuf is a bytes.Buffer that one goroutine may write while
// another reads it: a child process's output (exec copies it from its own
// goroutines), a logger shared by workers, read by the test that watches.
package syncbuf

import (
	"bytes"
	"sync"
)

// Buffer collects what is written to it; its zero value is empty and ready
// to use. It is safe for concurrent use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns everything written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
