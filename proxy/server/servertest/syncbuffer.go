package servertest

import (
	"bytes"
	"strings"
	"sync"
	"time"
)

// SyncBuffer is a bytes.Buffer safe for a writer goroutine (a logger, a
// child process's output) and a test reading it at the same time.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write implements io.Writer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Await waits up to d for s to be written and returns what was written so
// far and whether s is in it. It gives up early when gone is closed (the
// writer exited); gone may be nil.
func (s *SyncBuffer) Await(want string, d time.Duration, gone <-chan struct{}) (string, bool) {
	deadline := time.Now().Add(d)
	for {
		out := s.String()
		if strings.Contains(out, want) {
			return out, true
		}
		if time.Now().After(deadline) {
			return out, false
		}
		select {
		case <-gone:
			out = s.String()
			return out, strings.Contains(out, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
