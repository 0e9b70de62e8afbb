package app

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// adminSetup is a running instance whose admin listener is under test,
// with a poller to switch to that differs from the running one when this
// machine has two.
type adminSetup struct {
	*running
	admin    string // 127.0.0.1:port
	port     int
	from, to string
}

// startAdminGuarded starts an instance on one loop whose admin listener
// has the block adminBlock ("" for none); the %d in it is the admin port.
func startAdminGuarded(t *testing.T, backend, adminBlock string) *adminSetup {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile, _ := filePair(t, dir)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
	s := &adminSetup{admin: fmt.Sprintf("127.0.0.1:%d", adminPort), port: adminPort, from: backend, to: backend}
	for _, n := range netpoll.Available() {
		if n != backend {
			s.to = n
			break
		}
	}
	if adminBlock != "" {
		adminBlock = " {\n" + strings.ReplaceAll(adminBlock, "%d", fmt.Sprint(adminPort)) + "\n\t}"
	}
	file := filepath.Join(dir, "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin %s%s
	storage %s
	default_bind 127.0.0.1
}

localhost:%d {
	reverse_proxy %s
	tls %s %s
}
`, backend, s.admin, adminBlock, filepath.Join(dir, "storage"), port, startOrigin(t, "A").addr, certFile, keyFile)), 0o644)
	s.running = start(t, file, Options{})
	return s
}

// adminCall is one request to the admin listener, sent to its socket
// whatever Host says.
type adminCall struct {
	method, path, host string
	header             map[string]string
	body               string
}

// do sends c and returns the status, the answer and its header.
func (s *adminSetup) do(t *testing.T, c adminCall) (int, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(c.method, "http://"+s.admin+c.path, strings.NewReader(c.body))
	if err != nil {
		t.Fatal(err)
	}
	if c.host != "" {
		req.Host = strings.ReplaceAll(c.host, "%d", fmt.Sprint(s.port))
	}
	for k, v := range c.header {
		req.Header.Set(k, strings.ReplaceAll(v, "%d", fmt.Sprint(s.port)))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 200)) // enough to see which handler answered
	return resp.StatusCode, string(b), resp.Header
}

// switchTo is a POST /poller to s.to with header.
func (s *adminSetup) switchTo(host string, header map[string]string) adminCall {
	return adminCall{method: "POST", path: "/poller", host: host, header: header, body: fmt.Sprintf("%q", s.to)}
}

// adminCase is a call and the status it must get.
type adminCase struct {
	name string
	call adminCall
	want int
}

// refusals makes each call, wants its status, and wants the poller where
// it was after every one: none of them may switch it.
func (s *adminSetup) refusals(t *testing.T, cases []adminCase) {
	t.Helper()
	for _, c := range cases {
		if code, answer, _ := s.do(t, c.call); code != c.want {
			t.Errorf("%s: %d %q, want %d", c.name, code, answer, c.want)
		}
		if got := s.backend(); got != s.from {
			t.Fatalf("%s switched the poller to %s", c.name, got)
		}
	}
}

// backend is the loop's backend now.
func (s *adminSetup) backend() string { return s.in.Backends()[0] }

// TestAdminGuardDefault: with no admin block, Host must be one of the
// listener's loopback names, a request with a foreign Origin is refused,
// and a change needs application/json; curl's way (JSON, no Origin)
// switches the poller, what a page can send unasked does not.
func TestAdminGuardDefault(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		s := startAdminGuarded(t, backend, "")
		json := map[string]string{"Content-Type": "application/json"}
		s.refusals(t, []adminCase{
			{"127.0.0.1", adminCall{method: "GET", path: "/metrics"}, 200},
			{"localhost", adminCall{method: "GET", path: "/healthz", host: "localhost:%d"}, 200},
			{"::1", adminCall{method: "GET", path: "/healthz", host: "[::1]:%d"}, 200},
			{"LOCALHOST", adminCall{method: "GET", path: "/healthz", host: "LOCALHOST:%d"}, 200},
			{"rebound name", adminCall{method: "GET", path: "/metrics", host: "rebind.example:%d"}, 403},
			{"other port", adminCall{method: "GET", path: "/metrics", host: "127.0.0.1:1"}, 403},
			{"no port", adminCall{method: "GET", path: "/metrics", host: "127.0.0.1"}, 403},
			{"page origin on a read", adminCall{method: "GET", path: "/ab.json", header: map[string]string{"Origin": "http://127.0.0.1:8080"}}, 403},
			{"own origin on a read", adminCall{method: "GET", path: "/ab.json", header: map[string]string{"Origin": "http://127.0.0.1:%d"}}, 200},
			{"the intervals as CSV", adminCall{method: "GET", path: "/ab.csv"}, 200},
			{"page origin on the CSV", adminCall{method: "GET", path: "/ab.csv", header: map[string]string{"Origin": "http://127.0.0.1:8080"}}, 403},
			{"navigation", adminCall{method: "GET", path: "/ab", header: map[string]string{"Sec-Fetch-Mode": "navigate"}}, 200},
			{"text/plain", s.switchTo("", map[string]string{"Content-Type": "text/plain;charset=UTF-8"}), 415},
			{"form", s.switchTo("", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}), 415},
			{"multipart", s.switchTo("", map[string]string{"Content-Type": "multipart/form-data; boundary=x"}), 415},
			{"no type", s.switchTo("", nil), 415},
			{"json from a page", s.switchTo("", map[string]string{"Content-Type": "application/json", "Origin": "http://127.0.0.1:8080"}), 403},
			{"json from null", s.switchTo("", map[string]string{"Content-Type": "application/json", "Origin": "null"}), 403},
			{"json to a rebound name", s.switchTo("rebind.example:%d", json), 403},
			{"preflight from a page", adminCall{method: "OPTIONS", path: "/poller", header: map[string]string{"Origin": "http://127.0.0.1:8080", "Access-Control-Request-Method": "POST"}}, 403},
		})
		// What curl sends, and the same from the listener's own origin.
		if code, answer, _ := s.do(t, s.switchTo("", json)); code != 200 || s.backend() != s.to {
			t.Errorf("POST application/json: %d %q, backend %s, want %s", code, answer, s.backend(), s.to)
		}
		code, answer, h := s.do(t, adminCall{method: "OPTIONS", path: "/poller", header: map[string]string{"Origin": "http://localhost:%d", "Access-Control-Request-Method": "POST"}})
		if want := fmt.Sprintf("http://localhost:%d", s.port); code != 204 || h.Get("Access-Control-Allow-Origin") != want ||
			!strings.Contains(h.Get("Access-Control-Allow-Headers"), "Content-Type") {
			t.Errorf("preflight from the listener's origin: %d %q %v", code, answer, h)
		}
	})
}

// TestAdminGuardOrigins: origins replaces the default names, in Host and
// in Origin, a scheme given must match, and enforce_origin makes every
// request name an allowed origin (Origin or Referer).
func TestAdminGuardOrigins(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		s := startAdminGuarded(t, backend, "\t\torigins admin.example:%d https://dash.example\n\t\tenforce_origin")
		dash := map[string]string{"Origin": "https://dash.example"}
		s.refusals(t, []adminCase{
			{"named host, no origin", adminCall{method: "GET", path: "/metrics", host: "admin.example:%d"}, 403},
			{"named host, allowed origin", adminCall{method: "GET", path: "/metrics", host: "admin.example:%d", header: dash}, 200},
			{"named host, allowed referer", adminCall{method: "GET", path: "/ab.json", host: "admin.example:%d", header: map[string]string{"Referer": "https://dash.example/ab?x=1"}}, 200},
			{"default name no longer", adminCall{method: "GET", path: "/metrics", header: dash}, 403},
			{"scheme differs", adminCall{method: "GET", path: "/metrics", host: "admin.example:%d", header: map[string]string{"Origin": "http://dash.example"}}, 403},
			{"any scheme for host:port", adminCall{method: "GET", path: "/metrics", host: "admin.example:%d", header: map[string]string{"Origin": "https://admin.example:%d"}}, 200},
			{"change without origin", s.switchTo("admin.example:%d", map[string]string{"Content-Type": "application/json"}), 403},
		})
		code, answer, h := s.do(t, s.switchTo("admin.example:%d", map[string]string{"Content-Type": "application/json", "Origin": "https://dash.example"}))
		if code != 200 || s.backend() != s.to || h.Get("Access-Control-Allow-Origin") != "https://dash.example" {
			t.Errorf("POST from the allowed origin: %d %q %v, backend %s", code, answer, h, s.backend())
		}
	})
}
