package phpfpmtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// Server is a php-fpm the test started: one pool on a unix socket, one
// on a loopback TCP port, serving the PHP files under root.
type Server struct {
	t        testing.TB
	bin      string
	conf     string
	dir      string
	Sock     string // unix socket path
	Addr     string // 127.0.0.1:port
	cmd      *exec.Cmd
	out      *servertest.SyncBuffer
	stopped  bool
	maxReqs  int
	children int
}

// Start writes a php-fpm.conf in a temporary directory and starts
// php-fpm on it in the foreground (-F), without php.ini (-n). maxRequests
// is pm.max_requests (0: none). The test's cleanup stops it by PID.
func Start(t testing.TB, maxRequests int) *Server {
	t.Helper()
	bin := testenv.Tool(t, "php-fpm8.2", "php-fpm")
	dir := t.TempDir()
	f := &Server{t: t, bin: bin, dir: dir, Sock: filepath.Join(dir, "php.sock"),
		Addr: fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t)), maxReqs: maxRequests, children: 12}
	f.conf = filepath.Join(dir, "php-fpm.conf")
	pool := func(name, listen string) string {
		s := fmt.Sprintf("[%s]\nlisten = %s\npm = static\npm.max_children = %d\ncatch_workers_output = yes\nclear_env = yes\n"+
			"php_admin_value[upload_max_filesize] = 32M\nphp_admin_value[post_max_size] = 64M\n"+
			"php_admin_value[output_buffering] = 0\nphp_admin_flag[display_errors] = off\nphp_admin_value[error_reporting] = 32767\n",
			name, listen, f.children)
		if maxRequests > 0 {
			s += "pm.max_requests = " + strconv.Itoa(maxRequests) + "\n"
		}
		if os.Geteuid() == 0 {
			s += "user = nobody\ngroup = nogroup\n"
		}
		return s
	}
	conf := fmt.Sprintf("[global]\npid = %s\nerror_log = %s\ndaemonize = no\n\n", filepath.Join(dir, "fpm.pid"), filepath.Join(dir, "fpm.log")) +
		pool("unix", f.Sock) + "listen.mode = 0666\n\n" + pool("tcp", f.Addr)
	if err := os.WriteFile(f.conf, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	f.start()
	t.Cleanup(f.Stop)
	return f
}

func (f *Server) start() {
	f.t.Helper()
	args := []string{"-F", "-n", "-y", f.conf}
	if os.Geteuid() == 0 {
		args = append(args, "-R")
	}
	f.cmd = exec.Command(f.bin, args...)
	f.out = &servertest.SyncBuffer{}
	f.cmd.Stdout, f.cmd.Stderr = f.out, f.out
	if err := f.cmd.Start(); err != nil {
		f.t.Fatal(err)
	}
	f.stopped = false
	var err error
	if !servertest.Within(20*time.Second, func() bool {
		var c net.Conn
		if c, err = net.Dial("tcp", f.Addr); err != nil {
			return false
		}
		c.Close()
		if c, err = net.Dial("unix", f.Sock); err != nil {
			return false
		}
		c.Close()
		return true
	}) {
		log, _ := os.ReadFile(filepath.Join(f.dir, "fpm.log"))
		f.t.Fatalf("php-fpm did not listen: %v\n%s\n%s", err, f.out, log)
	}
}

// Stop ends php-fpm (SIGTERM, then SIGKILL after 10s) and waits for it.
func (f *Server) Stop() {
	if f.stopped {
		return
	}
	f.stopped = true
	f.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { f.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		f.cmd.Process.Kill()
		<-done
	}
	if f.t.Failed() {
		log, _ := os.ReadFile(filepath.Join(f.dir, "fpm.log"))
		f.t.Logf("php-fpm output:\n%s\n%s", f.out, log)
	}
}

// Restart stops php-fpm and starts it again on the same sockets.
func (f *Server) Restart() {
	f.Stop()
	os.Remove(f.Sock)
	f.start()
}

// Site writes files (name to content) under a new document root
// readable by php-fpm's workers, and returns it.
func Site(t testing.TB, files map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "www")
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// php-fpm's workers (nobody, when the tests run as root) read it:
	// the root, the test's directory and the one holding those.
	for d, i := root, 0; i < 3; d, i = filepath.Dir(d), i+1 {
		os.Chmod(d, 0o755)
	}
	return root
}
