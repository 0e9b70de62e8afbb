package sdnotify

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// listen opens a datagram socket as systemd does and points $NOTIFY_SOCKET
// at it, by path or, on Linux, by abstract name.
func listen(t *testing.T, abstract bool) *net.UnixConn {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify")
	if abstract {
		name = fmt.Sprintf("@pollproxy-sdnotify-test-%d-%d", os.Getpid(), time.Now().UnixNano())
	}
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	t.Setenv(SocketEnv, name)
	return c
}

// next reads one datagram; the deadline only keeps a broken test from
// hanging, the datagram is already queued when next is called.
func next(t *testing.T, c *net.UnixConn) string {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	buf := make([]byte, 4096)
	n, err := c.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	return string(buf[:n])
}

func monotonicUsec(t *testing.T) uint64 {
	t.Helper()
	v, err := MonotonicUsec()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestMessages: each call is one datagram with sd_notify(3)'s assignments,
// over a path and over an abstract name.
func TestMessages(t *testing.T) {
	for _, abstract := range []bool{false, true} {
		t.Run(fmt.Sprintf("abstract=%v", abstract), func(t *testing.T) {
			if abstract && runtime.GOOS != "linux" {
				t.Skip("abstract socket names are Linux's")
			}
			c := listen(t, abstract)
			if err := Ready(""); err != nil {
				t.Fatal(err)
			}
			if got := next(t, c); got != "READY=1" {
				t.Errorf("Ready: %q", got)
			}

			before := monotonicUsec(t)
			if err := Reloading(); err != nil {
				t.Fatal(err)
			}
			after := monotonicUsec(t)
			got := next(t, c)
			usec, ok := strings.CutPrefix(got, "RELOADING=1\nMONOTONIC_USEC=")
			v, err := strconv.ParseUint(usec, 10, 64)
			if !ok || err != nil || v < before || v > after {
				t.Errorf("Reloading: %q, want MONOTONIC_USEC in [%d, %d]", got, before, after)
			}

			if err := Ready("reload failed:\nCaddyfile:3: bad"); err != nil {
				t.Fatal(err)
			}
			if got := next(t, c); got != "READY=1\nSTATUS=reload failed: Caddyfile:3: bad" {
				t.Errorf("Ready with a status: %q", got)
			}
			if err := Stopping(); err != nil {
				t.Fatal(err)
			}
			if got := next(t, c); got != "STOPPING=1" {
				t.Errorf("Stopping: %q", got)
			}
		})
	}
}

// TestUnset: outside systemd every call succeeds and sends nothing.
func TestUnset(t *testing.T) {
	t.Setenv(SocketEnv, "")
	os.Unsetenv(SocketEnv)
	for _, f := range []func() error{func() error { return Ready("") }, Reloading, Stopping} {
		if err := f(); err != nil {
			t.Errorf("without %s: %v", SocketEnv, err)
		}
	}
}

// TestErrors: an address pollproxy cannot speak to, and a socket nobody
// listens on, are errors the caller can report, not silence.
func TestErrors(t *testing.T) {
	t.Setenv(SocketEnv, "vsock:2:1234")
	if err := Ready(""); !errors.Is(err, ErrUnsupportedSocket) {
		t.Errorf("vsock address: %v, want ErrUnsupportedSocket", err)
	}
	t.Setenv(SocketEnv, filepath.Join(t.TempDir(), "absent"))
	if err := Stopping(); err == nil {
		t.Error("no listener: no error")
	}
}
