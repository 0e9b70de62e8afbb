package redistest

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/testenv"
)

// Server is a redis-server started by a test.
type Server struct {
	// Addr is its host:port on 127.0.0.1.
	Addr string

	t    testing.TB
	bin  string
	dir  string
	port int

	mu  sync.Mutex
	cmd *exec.Cmd
	out logBuf
}

// logBuf is the server's output, written by the goroutine reading it.
type logBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *logBuf) add(line string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(line)
	l.b.WriteByte('\n')
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Start starts a redis-server on a free loopback port with a data
// directory of its own, and stops it (by its PID) when the test ends.
func Start(t testing.TB) *Server {
	t.Helper()
	bin := testenv.Tool(t, "redis-server", "redis-server")
	port := freePort(t)
	s := &Server{t: t, bin: bin, dir: t.TempDir(), port: port, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	s.Restart()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("redis-server output:\n%s", s.out.String())
		}
	})
	return s
}

// freePort returns a free loopback port below the kernel's ephemeral
// range. Restart binds the same port again after Stop, and while the
// server is down the client under test keeps dialing it: with the port
// inside the ephemeral range, one of those dials can be given that very
// port as its source and connect to itself (TCP simultaneous open), and
// the restart then fails with "address already in use".
func freePort(t testing.TB) int {
	t.Helper()
	lo := 32768 // Linux's default start of the range
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				lo = n
			}
		}
	}
	const first = 20000
	for range 200 {
		p := first + rand.IntN(max(lo-first, 1))
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err == nil {
			ln.Close()
			return p
		}
	}
	t.Fatalf("no free loopback port in %d-%d", first, lo-1)
	return 0
}

// Stop stops the server with SIGTERM (it flushes its append-only file)
// and waits for it to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-done
	}
	s.cmd = nil
}

// Restart starts the server again on the same port and data directory,
// after Stop (or stops it first), and waits until it accepts connections.
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin,
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "yes",
		"--appendfsync", "always",
		"--daemonize", "no",
		"--protected-mode", "yes",
		"--logfile", "",
	)
	pr, pw, err := os.Pipe()
	if err != nil {
		s.t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("starting redis-server: %v", err)
	}
	pw.Close()
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		once := sync.Once{}
		for sc.Scan() {
			line := sc.Text()
			s.out.add(line)
			if strings.Contains(line, "Ready to accept connections") {
				once.Do(func() { close(ready) })
			}
		}
	}()
	select {
	case <-ready:
	case <-time.After(15 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		s.t.Fatalf("redis-server did not start:\n%s", s.out.String())
	}
	s.cmd = cmd
}

// Dir is the server's data directory.
func (s *Server) Dir() string { return filepath.Clean(s.dir) }

// String is the server's address, for messages.
func (s *Server) String() string { return fmt.Sprintf("redis-server at %s", s.Addr) }
