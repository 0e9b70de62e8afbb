package servertest

import (
	"crypto/tls"
	"testing"
	"time"
)

// DialDelayed dials target with TLS through a DelayRelay that holds every
// chunk for delay each way: a long path on loopback. The connection and the
// relay close when the test ends.
func DialDelayed(t testing.TB, target string, delay time.Duration, cfg *tls.Config) *tls.Conn {
	t.Helper()
	relay, err := NewDelayRelay("127.0.0.1:0", target, delay, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { relay.Close() })
	c, err := tls.Dial("tcp", relay.Addr(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
