package proxy_test

import (
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// rawH2 is one h2 connection to the proxy over real TLS, written frame by
// frame, so a test can send what a well-behaved client library refuses to.
type rawH2 struct {
	t   *testing.T
	c   *stdtls.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

func (e *proxyEnv) dialRawH2(t *testing.T) *rawH2 {
	t.Helper()
	c, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("h2"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	r := &rawH2{t: t, c: c, fr: http2.NewFramer(c, c)}
	r.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	r.enc = hpack.NewEncoder(&r.buf)
	if err := r.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return r
}

// get sends a GET on stream id with extra fields, splitting the block into
// HEADERS and CONTINUATION frames of at most 16 KiB.
func (r *rawH2) get(id uint32, kv ...string) {
	r.t.Helper()
	r.buf.Reset()
	kv = append([]string{":method", "GET", ":scheme", "https", ":authority", "localhost", ":path", "/"}, kv...)
	for i := 0; i < len(kv); i += 2 {
		r.enc.WriteField(hpack.HeaderField{Name: kv[i], Value: kv[i+1]})
	}
	b := r.buf.Bytes()
	first := min(len(b), 16384)
	err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: b[:first], EndStream: true, EndHeaders: first == len(b)})
	for b = b[first:]; err == nil && len(b) > 0; {
		k := min(len(b), 16384)
		err = r.fr.WriteContinuation(id, k == len(b), b[:k])
		b = b[k:]
	}
	if err != nil {
		r.t.Fatal(err)
	}
}

// status reads frames until stream id's response head or reset; it
// returns ":status" or "RST_STREAM <code>".
func (r *rawH2) status(id uint32) string {
	r.t.Helper()
	for {
		f, err := r.fr.ReadFrame()
		if err != nil {
			r.t.Fatalf("stream %d: %v", id, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				r.fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				return f.PseudoValue("status")
			}
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				return "RST_STREAM " + f.ErrCode.String()
			}
		case *http2.GoAwayFrame:
			r.t.Fatalf("stream %d: GOAWAY %v", id, f.ErrCode)
		}
	}
}

// TestOversizedHeaders: a request head over the limit (64 KiB) gets a 431
// on its own stream — not REFUSED_STREAM, which tells a client to retry —
// the connection goes on serving, and HTTP/1.1 answers the same 431.
// curl is the client where it can be: its nghttp2 refuses locally to send
// a header block whose raw size is over 64 KiB (it reports that as
// REFUSED_STREAM and retries, against any server), so the 70 KB cookie
// goes over raw frames, and curl sends a list that is over the limit by
// its per-field overhead alone.
func TestOversizedHeaders(t *testing.T) {
	curl := testenv.Tool(t, "curl", "curl")
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newOrigin(t, nil)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		cookie := "session=" + strings.Repeat("c", 70<<10)

		r := e.dialRawH2(t)
		r.get(1, "cookie", cookie)
		if st := r.status(1); st != "431" {
			t.Fatalf("h2 70 KB cookie: %s, want 431", st)
		}
		r.get(3)
		if st := r.status(3); st != "200" {
			t.Fatalf("h2 after the 431: %s, want 200", st)
		}
		if n := o.reqs.Load(); n != 1 {
			t.Errorf("origin saw %d requests, want 1", n)
		}

		dir := t.TempDir()
		ca := e.certFile
		run := func(args ...string) (status, verbose string) {
			t.Helper()
			port := e.addr[strings.LastIndexByte(e.addr, ':')+1:]
			args = append([]string{"-sS", "-v", "--cacert", ca, "--resolve", "localhost:" + port + ":127.0.0.1",
				"-o", os.DevNull, "-w", "%{http_code} %{http_version}", "--max-time", "10"}, args...)
			args = append(args, "https://localhost:"+port+"/")
			var out, errb bytes.Buffer
			cmd := exec.Command(curl, args...)
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("curl %v: %v\n%s", args, err, errb.String())
			}
			return out.String(), errb.String()
		}

		// 2000 small fields: 80 KB counted as RFC 9113 §6.5.2 does (32
		// bytes a field), small enough raw for nghttp2 to send.
		var many bytes.Buffer
		for i := range 2000 {
			fmt.Fprintf(&many, "x-f%d: v\n", i)
		}
		hdrs := filepath.Join(dir, "headers")
		os.WriteFile(hdrs, many.Bytes(), 0o600)
		st, verbose := run("--http2", "-H", "@"+hdrs)
		if st != "431 2" {
			t.Fatalf("curl h2 with an 80 KB header list: %q, want 431 over h2\n%s", st, verbose)
		}
		if strings.Contains(verbose, "retry") || strings.Contains(verbose, "REFUSED") {
			t.Errorf("curl retried:\n%s", verbose)
		}

		st, verbose = run("--http1.1", "-H", "Cookie: "+cookie)
		if st != "431 1.1" {
			t.Fatalf("curl HTTP/1.1 70 KB cookie: %q, want 431\n%s", st, verbose)
		}
		if n := o.reqs.Load(); n != 1 {
			t.Errorf("origin saw %d requests, want 1", n)
		}
	})
}
