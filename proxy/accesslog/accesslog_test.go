package accesslog

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/observe"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

func sample() *observe.RequestLog {
	return &observe.RequestLog{
		Loop: 1, Poller: "epoll", Proto: "HTTP/2.0", Method: "GET", Authority: "example.com",
		Path: "/a?b=\"c\"", Remote: netip.MustParseAddrPort("192.0.2.7:5555"), Upstream: "127.0.0.1:8080",
		Status: 200, BytesOut: 1024, Start: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC),
		Duration: 412 * time.Microsecond, Reused: true,
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestCommon(t *testing.T) {
	got := string(AppendCommon(nil, sample()))
	want := `192.0.2.7 - - [02/Jan/2026:15:04:05 +0000] "GET /a?b=\"c\" HTTP/2.0" 200 1024 upstream=127.0.0.1:8080 duration=0.000412 poller=epoll loop=1` + "\n"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r := sample()
	r.Status, r.BytesOut, r.Upstream, r.Path = 0, 0, "", "/x\r\ny"
	got = string(AppendCommon(nil, r))
	if !strings.Contains(got, `"GET /x\x0d\x0ay HTTP/2.0" - - upstream=- `) {
		t.Errorf("reset line %s", got)
	}
}

// TestJSON: an entry has the shape of Caddy's access log, field for
// field, then pollproxy's own fields; credentials read REDACTED.
func TestJSON(t *testing.T) {
	var buf syncBuf
	l, err := New(JSON, &buf, 16)
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	r.Header = []stream.Field{{Name: "user-agent", Value: "curl/8"}, {Name: "accept", Value: "a"}, {Name: "accept", Value: "b"}, {Name: "cookie", Value: "secret"}}
	r.RespHeader = []stream.Field{{Name: "content-type", Value: "text/html"}}
	r.BytesRead = 7
	r.TLS = &stream.TLSState{Version: 0x0304, CipherSuite: 0x1301, Proto: "h2", ServerName: "example.com"}
	l.Observe(r)
	l.Close()
	line := strings.TrimSpace(buf.String())
	var m map[string]any
	if err := json.Unmarshal([]byte(line), &m); err != nil {
		t.Fatalf("%v: %q", err, buf.String())
	}
	want := map[string]any{"level": "info", "logger": "http.log.access", "msg": "handled request",
		"bytes_read": 7.0, "user_id": "", "status": 200.0, "size": 1024.0, "duration": 0.000412,
		"upstream": "127.0.0.1:8080", "reused": true, "poller": "epoll", "loop": 1.0}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %v, want %v", k, m[k], v)
		}
	}
	req, _ := m["request"].(map[string]any)
	wantReq := map[string]any{"remote_ip": "192.0.2.7", "remote_port": "5555", "client_ip": "192.0.2.7", "proto": "HTTP/2.0",
		"method": "GET", "host": "example.com", "uri": `/a?b="c"`}
	for k, v := range wantReq {
		if req[k] != v {
			t.Errorf("request.%s = %v, want %v", k, req[k], v)
		}
	}
	if !strings.Contains(line, `"headers":{"User-Agent":["curl/8"],"Accept":["a","b"],"Cookie":["REDACTED"]}`) {
		t.Errorf("request headers: %s", line)
	}
	if !strings.Contains(line, `"Cookie":["REDACTED"]},"tls":{"resumed":false,"version":772,"cipher_suite":4865,"proto":"h2","server_name":"example.com","ech":false}},"bytes_read":7`) {
		t.Errorf("tls: %s", line)
	}
	if !strings.Contains(line, `"resp_headers":{"Content-Type":["text/html"]}`) {
		t.Errorf("response headers: %s", line)
	}
	// Caddy's keys come first, in Caddy's order.
	order := []string{`"level"`, `"ts"`, `"logger"`, `"msg"`, `"request"`, `"bytes_read"`, `"user_id"`, `"duration"`, `"size"`, `"status"`, `"resp_headers"`, `"upstream"`}
	at := 0
	for _, k := range order {
		i := strings.Index(line[at:], k)
		if i < 0 {
			t.Fatalf("%s missing or out of order: %s", k, line)
		}
		at += i
	}
	if ts, _ := m["ts"].(float64); ts != float64(r.Start.Add(r.Duration).UnixNano())/1e9 {
		t.Errorf("ts %v", m["ts"])
	}
	if l.Written() != 1 || l.Dropped() != 0 {
		t.Errorf("written %d dropped %d", l.Written(), l.Dropped())
	}
}

// TestCredentials: log_credentials keeps what is REDACTED by default.
func TestCredentials(t *testing.T) {
	var buf syncBuf
	l, _ := NewLogger(NewWriter(&buf, 16), Options{Credentials: true})
	r := sample()
	r.Header = []stream.Field{{Name: "authorization", Value: "Basic YTpi"}}
	l.Observe(r)
	l.Close()
	if !strings.Contains(buf.String(), `"headers":{"Authorization":["Basic YTpi"]}`) {
		t.Errorf("with log_credentials: %s", buf.String())
	}
}

// TestConsole: Caddy's console format is its fields after the time, the
// level in color, the logger and the message; a 5xx is an error.
func TestConsole(t *testing.T) {
	var buf syncBuf
	l, err := NewLogger(NewWriter(&buf, 16), Options{Format: Console, Name: "log0"})
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	r.Status = 503
	l.Observe(r)
	l.Close()
	parts := strings.SplitN(strings.TrimSpace(buf.String()), "\t", 5)
	if len(parts) != 5 {
		t.Fatalf("console line %q", buf.String())
	}
	if parts[0] != "2026/01/02 15:04:05.000" || parts[1] != "\x1b[31mERROR\x1b[0m" || parts[2] != "http.log.access.log0" || parts[3] != "handled request" {
		t.Errorf("console prefix %q", parts[:4])
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(parts[4]), &m); err != nil || m["status"] != 503.0 {
		t.Errorf("console fields %q: %v", parts[4], err)
	}
}

// TestLevelHostsSkip: a logger writes entries at or above its level, for
// its hostnames only, and never a request log_skip matched.
func TestLevelHostsSkip(t *testing.T) {
	var buf syncBuf
	w := NewWriter(&buf, 16)
	errs, _ := NewLogger(w, Options{Name: "errors", Level: Error})
	hosts, _ := NewLogger(w, Options{Name: "hosts", Hostnames: []string{"A.example"}})
	for _, c := range []struct {
		status int
		host   string
		skip   bool
	}{{200, "b.example", false}, {502, "b.example", false}, {200, "a.example:8443", false}, {200, "a.example", true}} {
		r := sample()
		r.Status, r.Authority, r.Skip = c.status, c.host, c.skip
		errs.Observe(r)
		hosts.Observe(r)
	}
	w.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"logger":"http.log.access.errors"`) || !strings.Contains(lines[0], `"status":502`) ||
		!strings.Contains(lines[1], `"logger":"http.log.access.hosts"`) || !strings.Contains(lines[1], `"host":"a.example:8443"`) {
		t.Errorf("lines %q", lines)
	}
	if _, err := ParseLevel("loud"); err == nil {
		t.Errorf("unknown level accepted")
	}
}

// TestJSONReason: a request pollproxy ended carries its error in words
// and its reason as the metrics label it; a tunnel says how it ended.
func TestJSONReason(t *testing.T) {
	var buf syncBuf
	l, err := New(JSON, &buf, 16)
	if err != nil {
		t.Fatal(err)
	}
	r := sample()
	r.Status, r.Reason, r.Detail = 502, observe.ReasonConnect, "connection refused by upstream"
	l.Observe(r)
	r = sample()
	r.Status, r.Tunnel, r.Reason = 101, true, observe.ReasonStreamTimeout
	l.Observe(r)
	r = sample()
	l.Observe(r)
	l.Close()
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines: %q", len(lines), buf.String())
	}
	for i, want := range []map[string]any{
		{"status": 502.0, "error": "bad gateway: connection refused by upstream", "reason": "connect"},
		{"status": 101.0, "error": "stream_timeout", "reason": "stream_timeout", "tunnel_end": "stream_timeout"},
		{"status": 200.0, "error": nil, "reason": nil},
	} {
		var m map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &m); err != nil {
			t.Fatalf("%v: %q", err, lines[i])
		}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("line %d: %s = %v, want %v", i, k, m[k], v)
			}
		}
	}
}

// blockingWriter holds the writer goroutine until released.
type blockingWriter struct{ release chan struct{} }

func (w *blockingWriter) Write(p []byte) (int, error) { <-w.release; return len(p), nil }

func TestFullQueueDrops(t *testing.T) {
	w := &blockingWriter{release: make(chan struct{})}
	l, _ := New(Common, w, 4)
	start := time.Now()
	for i := 0; i < 1000; i++ {
		l.Observe(sample()) // must never block
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Observe blocked for %v", d)
	}
	if l.Dropped() < 1000-4-1-64 { // queue, the record in the writer's hands
		t.Errorf("dropped %d", l.Dropped())
	}
	close(w.release)
	l.Close()
	l.Observe(sample())
	if l.Written()+l.Dropped() != 1001 {
		t.Errorf("written %d + dropped %d != 1001", l.Written(), l.Dropped())
	}
}

func TestFileAndReopen(t *testing.T) {
	dir := t.TempDir()
	for _, roll := range []bool{false, true} {
		name := filepath.Join(dir, fmt.Sprintf("access-%v.log", roll))
		w, err := OpenWriter(Output{Kind: "file", File: name, Roll: Roll{Disabled: !roll}}, 16)
		if err != nil {
			t.Fatal(err)
		}
		l, _ := NewLogger(w, Options{Format: Common})
		l.Observe(sample())
		for l.Written() < 1 {
			time.Sleep(time.Millisecond)
		}
		if err := os.Rename(name, name+".1"); err != nil {
			t.Fatal(err)
		}
		if err := w.Reopen(); err != nil {
			t.Fatal(err)
		}
		l.Observe(sample())
		w.Close()
		for _, n := range []string{name, name + ".1"} {
			b, _ := os.ReadFile(n)
			if strings.Count(string(b), "\n") != 1 {
				t.Errorf("%s: %q", filepath.Base(n), b)
			}
			if st, err := os.Stat(n); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want Caddy's 0600", filepath.Base(n), st.Mode())
			}
		}
	}
	if _, err := NewLogger(NewWriter(io.Discard, 1), Options{Format: "xml"}); err == nil {
		t.Errorf("bad format accepted")
	}
	if _, err := OpenWriter(Output{Kind: "file", File: filepath.Join(dir, "no", "such", "dir")}, 1); err == nil {
		t.Errorf("bad path accepted")
	}
}

var _ io.Writer = (*syncBuf)(nil)

// TestUser: the user basic_auth let in is the Common line's authuser
// (one field, whatever it holds) and the JSON line's user_id, as Caddy
// names it.
func TestUser(t *testing.T) {
	r := sample()
	r.User = `al ice"`
	if got := string(AppendCommon(nil, r)); !strings.HasPrefix(got, `192.0.2.7 - al\x20ice\" [02/Jan/2026`) {
		t.Errorf("common line %s", got)
	}
	var m map[string]any
	b := new(bytes.Buffer)
	l, _ := New(JSON, b, 16)
	l.Observe(r)
	l.Close()
	if err := json.Unmarshal(b.Bytes(), &m); err != nil || m["user_id"] != r.User {
		t.Errorf("json %q: user_id %v", b, m["user_id"])
	}
}

// TestRollNext: the next roll by time is the earliest of roll_interval,
// roll_at and roll_minutes still to come.
func TestRollNext(t *testing.T) {
	now := time.Date(2026, 1, 2, 10, 20, 0, 0, time.Local)
	for _, c := range []struct {
		r    Roll
		want time.Time
	}{
		{Roll{}, time.Time{}},
		{Roll{Interval: time.Hour}, now.Add(50 * time.Minute)},
		{Roll{At: []string{"00:00", "12:00"}}, time.Date(2026, 1, 2, 12, 0, 0, 0, time.Local)},
		{Roll{At: []string{"09:00"}}, time.Date(2026, 1, 3, 9, 0, 0, 0, time.Local)},
		{Roll{Minutes: []int{15, 45}, At: []string{"12:00"}}, time.Date(2026, 1, 2, 10, 45, 0, 0, time.Local)},
		{Roll{Minutes: []int{15}}, time.Date(2026, 1, 2, 11, 15, 0, 0, time.Local)},
	} {
		if got := c.r.next(now, now.Add(-70*time.Minute)); !got.Equal(c.want) {
			t.Errorf("%+v: next %v, want %v", c.r, got, c.want)
		}
	}
}

// TestRollInterval: a file output with roll_interval is rolled by its
// writer when the interval is up, without a size reached.
func TestRollInterval(t *testing.T) {
	dir := t.TempDir()
	name := filepath.Join(dir, "timed.log")
	w, err := OpenWriter(Output{Kind: "file", File: name, Roll: Roll{Interval: 20 * time.Millisecond, Uncompressed: true}}, 16)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	l, _ := NewLogger(w, Options{})
	l.Observe(sample())
	for i := 0; i < 500; i++ {
		if m, _ := filepath.Glob(filepath.Join(dir, "timed-*.log")); len(m) > 0 {
			// Only a file with an entry is rolled.
			if len(m) != 1 {
				t.Errorf("rolled %q, want one file", m)
			}
			b, _ := os.ReadFile(m[0])
			if !strings.Contains(string(b), `"msg":"handled request"`) {
				t.Errorf("rolled file %q", b)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no file rolled by roll_interval")
}

// TestFilter: Caddy's filter format — delete, replace (one string),
// hash, ip_mask and regexp — on request fields and headers.
func TestFilter(t *testing.T) {
	var buf syncBuf
	l, _ := NewLogger(NewWriter(&buf, 16), Options{Filters: []Filter{
		{Field: "request>headers>User-Agent", Op: "delete"},
		{Field: "request>headers>Cookie", Op: "replace", Value: "gone"},
		{Field: "request>remote_ip", Op: "ip_mask", V4: 16, V6: 32},
		{Field: "request>client_ip", Op: "delete"},
		{Field: "request>uri", Op: "regexp", Re: regexp.MustCompile(`token=[^&]*`), Value: "token=x"},
		{Field: "user_id", Op: "hash"},
		{Field: "resp_headers>Set-Cookie", Op: "delete"},
	}})
	r := sample()
	r.Path, r.User = "/a?token=secret&b=1", "alice"
	r.Header = []stream.Field{{Name: "user-agent", Value: "curl"}, {Name: "cookie", Value: "a=1"}, {Name: "accept", Value: "*/*"}}
	r.RespHeader = []stream.Field{{Name: "set-cookie", Value: "s=1"}, {Name: "content-type", Value: "text/plain"}}
	l.Observe(r)
	l.Close()
	line := buf.String()
	for _, want := range []string{
		`"request":{"remote_ip":"192.0.0.0","remote_port":"5555","proto"`,
		`"uri":"/a?token=x&b=1","headers":{"Cookie":"gone","Accept":["*/*"]}`,
		fmt.Sprintf(`"user_id":"%.4x"`, sha256.Sum256([]byte("alice"))),
		`"resp_headers":{"Content-Type":["text/plain"]}`,
	} {
		if !strings.Contains(line, want) {
			t.Errorf("want %s in %s", want, line)
		}
	}
	if err := CheckFilterField("request>tls>cipher_suite"); err == nil {
		t.Errorf("an unsupported field accepted")
	}
}
