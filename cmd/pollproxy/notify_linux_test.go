package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/pollproxy/pollproxy/cmd/pollproxy/internal/sdnotify"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// notifySocket is the service manager's end of $NOTIFY_SOCKET: a datagram
// socket that, like systemd's, learns each sender's process ID from the
// kernel (SO_PASSCRED), since systemd takes notifications from the main
// process only (NotifyAccess=main).
type notifySocket struct {
	t    *testing.T
	conn *net.UnixConn
	name string
}

func listenNotify(t *testing.T) *notifySocket {
	t.Helper()
	name := filepath.Join(t.TempDir(), "notify")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_PASSCRED, 1)
	}); err != nil || serr != nil {
		t.Fatalf("SO_PASSCRED: %v %v", err, serr)
	}
	return &notifySocket{t: t, conn: c, name: name}
}

// next returns the next datagram and the process ID that sent it. The
// deadline only keeps a broken pollproxy from hanging the test.
func (s *notifySocket) next() (string, int) {
	s.t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(unix.SizeofUcred))
	n, oobn, _, _, err := s.conn.ReadMsgUnix(buf, oob)
	if err != nil {
		s.t.Fatalf("no notification: %v", err)
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil || len(msgs) != 1 {
		s.t.Fatalf("credentials: %v (%d messages)", err, len(msgs))
	}
	cred, err := unix.ParseUnixCredentials(&msgs[0])
	if err != nil {
		s.t.Fatal(err)
	}
	return string(buf[:n]), int(cred.Pid)
}

// want reads the next datagram and wants it to be exactly msg, from pid.
func (s *notifySocket) want(msg string, pid int) {
	s.t.Helper()
	got, from := s.next()
	if got != msg || from != pid {
		s.t.Fatalf("notification %q from pid %d, want %q from pid %d", got, from, msg, pid)
	}
}

func monotonicUsec(t *testing.T) uint64 {
	t.Helper()
	v, err := sdnotify.MonotonicUsec()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRunNotify runs pollproxy as systemd runs a Type=notify service and
// checks what it says, in order: READY=1 once its listener answers,
// RELOADING=1 with CLOCK_MONOTONIC in µs then READY=1 around a SIGHUP
// reload (also one that fails, whose error becomes the status line), and
// STOPPING=1 on SIGTERM before it exits.
func TestRunNotify(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		certFile, keyFile, roots := servertest.CertFiles(t)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		conf := func(body string) {
			os.WriteFile(file, []byte(fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\nlocalhost:%d {\n\t%s\n\ttls %s %s\n}\n",
				filepath.Join(dir, "storage"), port, body, certFile, keyFile)), 0o644)
		}
		conf(`respond "first"`)
		sock := listenNotify(t)
		p := startProc(t, "pollproxy running", []string{"NOTIFY_SOCKET=" + sock.name},
			"run", "--config", file, "--poller", backend)
		pid := p.cmd.Process.Pid

		sock.want("READY=1", pid)
		c := servertest.H2Client(fmt.Sprintf("127.0.0.1:%d", port), roots)
		url := fmt.Sprintf("https://localhost:%d/", port)
		if body := getBody(t, c, url); body != "first" {
			t.Fatalf("after READY=1: %q", body)
		}

		reload := func() string {
			t.Helper()
			before := monotonicUsec(t)
			p.cmd.Process.Signal(syscall.SIGHUP)
			got, from := sock.next()
			after := monotonicUsec(t)
			usec, ok := strings.CutPrefix(got, "RELOADING=1\nMONOTONIC_USEC=")
			v, err := strconv.ParseUint(usec, 10, 64)
			if !ok || err != nil || v < before || v > after || from != pid {
				t.Fatalf("after SIGHUP: %q from pid %d, want RELOADING=1 and MONOTONIC_USEC in [%d, %d] from pid %d",
					got, from, before, after, pid)
			}
			got, from = sock.next()
			status, ok := strings.CutPrefix(got, "READY=1\nSTATUS=")
			if !ok || from != pid {
				t.Fatalf("reload done: %q from pid %d, want READY=1 and a status from pid %d", got, from, pid)
			}
			return status
		}
		conf(`respond "second"`)
		if status := reload(); status != "configuration reloaded" {
			t.Errorf("reload status %q", status)
		}
		if body := getBody(t, c, url); body != "second" {
			t.Errorf("after the reload's READY=1: %q", body)
		}
		conf(`respond "third" {`)
		if status := reload(); !strings.HasPrefix(status, "reload failed, running the previous configuration: "+file+":") {
			t.Errorf("failed reload's status %q, want its file:line", status)
		}
		if body := getBody(t, c, url); body != "second" {
			t.Errorf("after a failed reload: %q", body)
		}

		c.CloseIdleConnections()
		p.stop(syscall.SIGTERM)
		sock.want("STOPPING=1", pid)
	})
}
