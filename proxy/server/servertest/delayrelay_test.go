package servertest

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestDelayRelayRate: a relay with a rate delivers no faster than that
// rate and adds its delay as well; one without a rate still adds the delay.
func TestDelayRelayRate(t *testing.T) {
	const (
		size  = 2 << 20
		delay = 10 * time.Millisecond
		rate  = 20 << 20 // bytes per second: size takes 100 ms
	)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := make(chan int64, 1)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n, _ := io.Copy(io.Discard, c)
			c.Close()
			got <- n
		}
	}()
	send := func(rate int64) time.Duration {
		r, err := NewDelayRelay("127.0.0.1:0", ln.Addr().String(), delay, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		r.SetRate(rate)
		c, err := net.Dial("tcp", r.Addr())
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if _, err := c.Write(make([]byte, size)); err != nil {
			t.Fatal(err)
		}
		c.(*net.TCPConn).CloseWrite()
		select {
		case n := <-got:
			if n != size {
				t.Fatalf("target read %d bytes, want %d", n, size)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the bytes never arrived")
		}
		c.Close()
		return time.Since(start)
	}
	if d, least := send(rate), time.Duration(size)*time.Second/rate+delay; d < least {
		t.Errorf("%d bytes at %d B/s took %v, less than %v", size, rate, d, least)
	}
	if d := send(0); d < delay {
		t.Errorf("%d bytes unlimited took %v, less than the delay %v", size, d, delay)
	}
}
