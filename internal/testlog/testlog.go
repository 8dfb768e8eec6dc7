// Package testlog is a buffer goroutines may write to at once, for tests
// that read what a server or a command logged while it runs.
package testlog

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer behind a lock: an io.Writer for a logger
// several goroutines write to, read with String at any time.
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

// String is what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
