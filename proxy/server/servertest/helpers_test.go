package servertest

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestWithin: a condition another goroutine makes true is seen; one that
// never holds is reported false once the timeout has passed.
func TestWithin(t *testing.T) {
	var set atomic.Bool
	go func() {
		time.Sleep(30 * time.Millisecond) // the other goroutine's work
		set.Store(true)
	}()
	if !Within(10*time.Second, set.Load) {
		t.Fatal("a condition set by another goroutine was not seen")
	}
	looks := 0
	if Within(50*time.Millisecond, func() bool { looks++; return false }) {
		t.Fatal("a condition that never holds was reported to hold")
	}
	if looks < 2 {
		t.Errorf("looked %d times, want the condition polled", looks)
	}
}

// TestOriginGet: Get reads what an origin that Says a body answers, with
// its status; Fetch does the same without a test, and reports a refused
// connection as an error.
func TestOriginGet(t *testing.T) {
	addr := Origin(t, Says("hello"), func(s *http.Server) {
		s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusTeapot)
			Says("edited").ServeHTTP(w, r)
		})
	})
	c := &http.Client{Timeout: 10 * time.Second}
	if status, body, _ := Get(t, c, "http://"+addr+"/"); status != http.StatusTeapot || body != "edited" {
		t.Errorf("GET through the edited origin: %d %q", status, body)
	}
	plain := Origin(t, Says("hello"))
	if status, body, err := Fetch(c, "http://"+plain+"/"); err != nil || status != 200 || body != "hello" {
		t.Errorf("Fetch: %d %q %v", status, body, err)
	}
	if _, _, err := Fetch(c, "http://127.0.0.1:1/"); err == nil {
		t.Error("Fetch from a closed port succeeded")
	}
}
