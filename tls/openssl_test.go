package tls

import (
	"bytes"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/eventually"
	"github.com/pollproxy/pollproxy/internal/testenv"
)

// lockedBuffer collects a child process's output for polling.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitFor polls until out holds want n times.
func waitFor(t *testing.T, out *lockedBuffer, want string, n int) {
	t.Helper()
	if !eventually.Within(5*time.Second, func() bool { return strings.Count(out.String(), want) >= n }) {
		t.Fatalf("openssl output never showed %q %d times:\n%s", want, n, out.String())
	}
}

// TestKeyUpdateOpenSSL has openssl s_client send TLS 1.3 KeyUpdate messages
// (requesting an update in return) to the loop: the session must answer
// with its own KeyUpdate and keep both directions working.
func TestKeyUpdateOpenSSL(t *testing.T) {
	openssl := testenv.Tool(t, "openssl", "openssl")
	pool := newPool(t, 2, 4, 5*time.Second)
	for _, oneByte := range []bool{false, true} {
		t.Run(fmt.Sprintf("oneByte=%v", oneByte), func(t *testing.T) {
			ln := listen(t)
			res := accept(t, ln, pool, serverConfig(t), loopOpts{feedOneByte: oneByte})
			cmd := exec.Command(openssl, "s_client",
				"-connect", ln.Addr().String(), "-servername", "localhost",
				"-tls1_3", "-alpn", "h2", "-msg", "-no_ign_eof")
			stdin, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			out := &lockedBuffer{}
			cmd.Stdout, cmd.Stderr = out, out
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()

			io.WriteString(stdin, "line-0\n")
			waitFor(t, out, "line-0", 1)
			for i := 1; i <= 3; i++ {
				// "K": send a KeyUpdate with update_requested.
				io.WriteString(stdin, "K\n")
				waitFor(t, out, "KeyUpdate", 2*i) // ours sent and the server's received
				line := fmt.Sprintf("line-%d", i)
				io.WriteString(stdin, line+"\n")
				waitFor(t, out, line, 1)
			}
			// "k": a KeyUpdate that requests nothing back.
			io.WriteString(stdin, "k\n")
			waitFor(t, out, ">>> TLS 1.3, Handshake [length 0005], KeyUpdate", 4)
			io.WriteString(stdin, "line-4\n")
			waitFor(t, out, "line-4", 1)
			stdin.Close() // s_client sends close_notify
			r := wait(t, res)
			cmd.Wait()
			if r.hsErr != nil || r.err != nil || !r.eof {
				t.Fatalf("server: %+v\nopenssl:\n%s", r, out.String())
			}
			if got := strings.Count(out.String(), "<<< TLS 1.3, Handshake [length 0005], KeyUpdate"); got != 3 {
				t.Fatalf("client received %d KeyUpdates, want 3:\n%s", got, out.String())
			}
		})
	}
}

// TestRenegotiationRefusedOpenSSL has openssl s_client ask for a TLS 1.2
// renegotiation ("R"): the loop's Read fails and an alert reaches the client.
func TestRenegotiationRefusedOpenSSL(t *testing.T) {
	openssl := testenv.Tool(t, "openssl", "openssl")
	pool := newPool(t, 1, 1, 5*time.Second)
	ln := listen(t)
	res := accept(t, ln, pool, serverConfig(t), loopOpts{})
	cmd := exec.Command(openssl, "s_client", "-connect", ln.Addr().String(), "-tls1_2", "-no_ign_eof")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	io.WriteString(stdin, "before\n")
	waitFor(t, out, "before", 1)
	io.WriteString(stdin, "R\n")
	r := wait(t, res)
	if r.err == nil || r.eof {
		t.Fatalf("server: %+v", r)
	}
	t.Logf("Read error: %v", r.err)
	cmd.Wait()
	if !strings.Contains(out.String(), "alert") {
		t.Fatalf("client saw no alert:\n%s", out.String())
	}
}
