package tls

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"
)

// waitDone waits for the final notify of a handshake and returns its error.
func waitDone(t *testing.T, s *Session, wake <-chan struct{}) error {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if done, err := s.HandshakeDone(); done {
			return err
		}
		select {
		case <-wake:
		case <-deadline:
			t.Fatal("handshake did not finish")
		}
	}
}

func wakeChan() (chan struct{}, func()) {
	wake := make(chan struct{}, 1)
	return wake, func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
}

// TestClientFeedEOF: an origin that closes during the handshake ends the
// client's handshake at once with EOF, not at the timeout, and what it
// sent first (an alert) is read before the EOF.
func TestClientFeedEOF(t *testing.T) {
	pool := newPool(t, 1, 1, time.Hour)
	t.Run("silent", func(t *testing.T) {
		c := NewClientSession(clientConfig(t, 0, ""), nil, nil)
		wake, notify := wakeChan()
		if err := pool.Start(c, notify); err != nil {
			t.Fatal(err)
		}
		c.FeedEOF()
		if err := waitDone(t, c, wake); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Fatalf("handshake error %v, want EOF", err)
		}
	})
	t.Run("alert", func(t *testing.T) {
		c := NewClientSession(clientConfig(t, 0, ""), nil, nil)
		wake, notify := wakeChan()
		if err := pool.Start(c, notify); err != nil {
			t.Fatal(err)
		}
		// A fatal handshake_failure alert, as a server that shares no
		// cipher suite sends before it closes.
		if err := c.Feed([]byte{21, 3, 3, 0, 2, 2, 40}); err != nil {
			t.Fatal(err)
		}
		c.FeedEOF()
		err := waitDone(t, c, wake)
		if err == nil || !strings.Contains(err.Error(), "handshake failure") {
			t.Fatalf("handshake error %v, want the server's alert", err)
		}
	})
}

// TestStartWithin: a session's own timeout ends its handshake even when
// the pool's is far away.
func TestStartWithin(t *testing.T) {
	pool := newPool(t, 1, 1, time.Hour)
	c := NewClientSession(clientConfig(t, 0, ""), nil, nil)
	wake, notify := wakeChan()
	if err := pool.StartWithin(c, notify, 20*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := waitDone(t, c, wake); !errors.Is(err, ErrHandshakeTimeout) {
		t.Fatalf("handshake error %v, want ErrHandshakeTimeout", err)
	}
}
