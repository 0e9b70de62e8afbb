package app

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/internal/testenv"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/encode/encodetest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// encodePage is a page of HTML about the size encode is measured at.
var encodePage = encodetest.Page()

// encodeOrigin serves what the encode tests ask for: /page (HTML with a
// length and a strong ETag, 304 for a matching If-None-Match),
// /chunked (the page in pieces, no length), /notype (the page with no
// Content-Type), /small, /png, /br (encoded already), /nt
// (no-transform), /range (Range honoured), /sse (events as the test
// releases them on the channel named by ch=; /stream the same as
// text/plain). Every request's If-None-Match is reported in
// X-Seen-INM.
func encodeOrigin(t *testing.T, events map[string]chan string) string {
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Seen-INM", r.Header.Get("If-None-Match"))
		name := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
		switch name {
		case "page":
			h.Set("ETag", `"v1"`)
			h.Set("Accept-Ranges", "bytes")
			if r.Header.Get("If-None-Match") == `"v1"` {
				w.WriteHeader(304)
				return
			}
			h.Set("Content-Type", "text/html; charset=utf-8")
			h.Set("Content-Length", strconv.Itoa(len(encodePage)))
			w.Write(encodePage)
		case "chunked":
			h.Set("Content-Type", "text/html; charset=utf-8")
			for p := encodePage; len(p) > 0; {
				k := min(len(p), 3000)
				w.Write(p[:k])
				w.(http.Flusher).Flush()
				p = p[k:]
			}
		case "notype":
			h["Content-Type"] = nil // no sniffing by the origin
			h.Set("Content-Length", strconv.Itoa(len(encodePage)))
			w.Write(encodePage)
		case "small":
			h.Set("Content-Type", "text/plain")
			w.Write(encodePage[:400])
		case "png":
			h.Set("Content-Type", "image/png")
			w.Write(encodePage)
		case "br":
			h.Set("Content-Type", "text/html")
			h.Set("Content-Encoding", "br")
			w.Write(encodePage)
		case "nt":
			h.Set("Content-Type", "text/html")
			h.Set("Cache-Control", "public, no-transform")
			w.Write(encodePage)
		case "range":
			http.ServeContent(w, r, "page.html", time.Time{}, bytes.NewReader(encodePage))
		case "sse", "stream":
			h.Set("Content-Type", "text/event-stream")
			if name == "stream" {
				h.Set("Content-Type", "text/plain")
			}
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			for ev := range events[r.URL.Query().Get("ch")] {
				fmt.Fprintf(w, "data: %s\n\n", ev)
				w.(http.Flusher).Flush()
			}
		default:
			http.NotFound(w, r)
		}
	}))
}

// decoded reads a response's body, decoding it by its Content-Encoding.
func decoded(t *testing.T, resp *http.Response) []byte {
	t.Helper()
	var r io.Reader = resp.Body
	switch ce := resp.Header.Get("Content-Encoding"); ce {
	case "", "br": // br: the origin's, passed on as it is
	case "gzip":
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		r = zr
	case "zstd":
		zr, err := zstd.NewReader(resp.Body)
		if err != nil {
			t.Fatalf("zstd: %v", err)
		}
		defer zr.Close()
		r = zr
	default:
		t.Fatalf("unexpected Content-Encoding %q", ce)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("reading the %q body: %v", resp.Header.Get("Content-Encoding"), err)
	}
	return b
}

// encodeCase is one request through encode and what must come back.
type encodeCase struct {
	name, method, path string
	header             map[string]string
	status             int
	encoding           string            // Content-Encoding wanted
	body               []byte            // the decoded body (nil: not checked)
	want               map[string]string // fields ("" : absent)
}

func (c encodeCase) run(t *testing.T, cl *http.Client, base string) {
	t.Helper()
	method := c.method
	if method == "" {
		method = "GET"
	}
	req, _ := http.NewRequest(method, base+c.path, nil)
	for k, v := range c.header {
		req.Header.Set(k, v)
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", c.name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != c.status {
		t.Errorf("%s: status %d, want %d", c.name, resp.StatusCode, c.status)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != c.encoding {
		t.Errorf("%s: Content-Encoding %q, want %q", c.name, ce, c.encoding)
	}
	for k, v := range c.want {
		if got := strings.Join(resp.Header.Values(k), ", "); got != v {
			t.Errorf("%s: %s = %q, want %q", c.name, k, got, v)
		}
	}
	if method == "HEAD" {
		if b, _ := io.ReadAll(resp.Body); len(b) != 0 {
			t.Errorf("%s: HEAD answered with %d body bytes", c.name, len(b))
		}
		return
	}
	body := decoded(t, resp)
	if c.body != nil && !bytes.Equal(body, c.body) {
		t.Errorf("%s: body of %d bytes, want %d", c.name, len(body), len(c.body))
	}
}

// TestEncode: Caddy's encode over HTTP/2 and HTTP/1.1 on every poller
// backend: gzip and zstd chosen by the client's q-values, then the
// directive's order; what is never encoded (small, images, already
// encoded, no-transform, ranges); HEAD and 304 carrying the encoded
// representation's fields; the ETag marked and the mark taken off
// If-None-Match again; a chunked origin response and one with a length;
// a respond body; the options of the block.
func TestEncode(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := encodeOrigin(t, nil)
		port, cls := startSite(t, backend, fmt.Sprintf(`	@gz path /gz/*
	encode @gz gzip zstd {
		minimum_length 30000
	}
	@zs path /zs/*
	encode @zs {
		zstd better
		gzip 9
		match {
			header Content-Type application/wasm*
			header Content-Type image/*
		}
	}
	@bare not path /gz/* /zs/*
	encode @bare
	respond /respond "%s"
	reverse_proxy %s`, strings.Repeat("respond body ", 100), o))
		base := fmt.Sprintf("https://localhost:%d", port)
		page := encodePage
		both := map[string]string{"Accept-Encoding": "gzip, zstd"}
		gz := map[string]string{"Accept-Encoding": "gzip"}
		vary := map[string]string{"Vary": "Accept-Encoding", "Content-Length": "", "Accept-Ranges": ""}
		cases := []encodeCase{
			{name: "bare prefers zstd", path: "/page", header: both, status: 200, encoding: "zstd", body: page,
				want: map[string]string{"Vary": "Accept-Encoding", "Content-Length": "", "Accept-Ranges": "", "ETag": `"v1-zstd"`}},
			{name: "gzip only", path: "/page", header: gz, status: 200, encoding: "gzip", body: page,
				want: map[string]string{"ETag": `"v1-gzip"`, "Content-Type": "text/html; charset=utf-8"}},
			{name: "q-values", path: "/page", header: map[string]string{"Accept-Encoding": "zstd;q=0.5, gzip;q=0.8"}, status: 200, encoding: "gzip", body: page},
			{name: "q=0 refuses", path: "/page", header: map[string]string{"Accept-Encoding": "zstd;q=0, gzip"}, status: 200, encoding: "gzip", body: page},
			{name: "identity", path: "/page", header: map[string]string{"Accept-Encoding": "identity"}, status: 200, body: page,
				want: map[string]string{"Vary": "Accept-Encoding", "Content-Length": strconv.Itoa(len(page)), "ETag": `"v1"`}},
			{name: "chunked origin", path: "/chunked", header: gz, status: 200, encoding: "gzip", body: page, want: vary},
			{name: "sniffed type", path: "/notype", header: gz, status: 200, encoding: "gzip", body: page,
				want: map[string]string{"Content-Type": "text/html; charset=utf-8"}},
			{name: "small", path: "/small", header: both, status: 200, body: page[:400], want: map[string]string{"Vary": ""}},
			{name: "image", path: "/png", header: both, status: 200, body: page, want: map[string]string{"Vary": ""}},
			{name: "already encoded", path: "/br", header: both, status: 200, want: map[string]string{"Content-Encoding": "br", "Vary": ""}, encoding: "br"},
			{name: "no-transform", path: "/nt", header: both, status: 200, body: page},
			{name: "range", path: "/range", header: map[string]string{"Accept-Encoding": "gzip", "Range": "bytes=0-99"}, status: 206, body: page[:100],
				want: map[string]string{"Content-Range": fmt.Sprintf("bytes 0-99/%d", len(page))}},
			{name: "HEAD", method: "HEAD", path: "/page", header: gz, status: 200, encoding: "gzip",
				want: map[string]string{"Vary": "Accept-Encoding", "Content-Length": "", "ETag": `"v1-gzip"`}},
			{name: "304 for the encoded ETag", path: "/page", header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": `"v1-gzip"`}, status: 304,
				want: map[string]string{"Vary": "Accept-Encoding", "X-Seen-INM": `"v1"`}},
			{name: "other encoding's ETag kept", path: "/page", header: map[string]string{"Accept-Encoding": "gzip", "If-None-Match": `"v1-zstd"`}, status: 200, encoding: "gzip", body: page,
				want: map[string]string{"X-Seen-INM": `"v1-zstd"`}},
			{name: "respond", path: "/respond", header: gz, status: 200, encoding: "gzip", body: []byte(strings.Repeat("respond body ", 100))},
			{name: "minimum_length", path: "/gz/page", header: both, status: 200, body: page, want: map[string]string{"Vary": ""}},
			{name: "block order", path: "/zs/png", header: both, status: 200, encoding: "zstd", body: page},
			{name: "block match", path: "/zs/page", header: both, status: 200, body: page},
			{name: "block gzip", path: "/zs/png", header: gz, status: 200, encoding: "gzip", body: page},
		}
		for proto, cl := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, c := range cases {
					c.run(t, cl, base)
				}
			})
		}
	})
}

// TestEncodeCurl: curl --compressed, a client that decodes by itself,
// gets the page whole over both protocols.
func TestEncodeCurl(t *testing.T) {
	testenv.Tool(t, "curl", "curl")
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := encodeOrigin(t, nil)
		port, _ := startSite(t, backend, "\tencode\n\treverse_proxy "+o)
		url := fmt.Sprintf("https://localhost:%d/chunked", port)
		resolve := fmt.Sprintf("localhost:%d:127.0.0.1", port)
		for _, proto := range []string{"--http2", "--http1.1"} {
			for _, enc := range []string{"gzip", "zstd"} {
				out, err := exec.Command("curl", "-sS", "-k", proto, "--resolve", resolve, "--compressed",
					"-H", "Accept-Encoding: "+enc, "-D", "/dev/stderr", url).Output()
				if err != nil {
					t.Fatalf("curl %s %s: %v", proto, enc, err)
				}
				if !bytes.Equal(out, encodePage) {
					t.Errorf("curl %s %s: %d bytes, want the page's %d", proto, enc, len(out), len(encodePage))
				}
			}
		}
	})
}

// TestEncodeSSE: server-sent events through encode arrive one by one,
// each decodable before the next is sent; so does any response streamed
// in pieces (flush_interval -1): what the encoder holds goes out when
// the origin goes quiet.
func TestEncodeSSE(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		events := map[string]chan string{}
		for _, ch := range []string{"sse h2", "sse h1.1", "stream h2", "stream h1.1"} {
			events[ch] = make(chan string, 1)
		}
		o := encodeOrigin(t, events)
		port, cls := startSite(t, backend, "\tencode gzip\n\treverse_proxy "+o+" {\n\t\tflush_interval -1\n\t}")
		for _, path := range []string{"sse", "stream"} {
			for proto, cl := range cls {
				t.Run(path+"/"+proto, func(t *testing.T) { readEvents(t, cl, port, path, proto, events[path+" "+proto]) })
			}
		}
		for _, ch := range events {
			close(ch)
		}
	})
}

// readEvents reads three events of path, each sent on events only once
// the one before was read whole. The head of a stream that is not
// server-sent events waits for its first bytes, as in Caddy: encode
// decides on it by them.
func readEvents(t *testing.T, cl *http.Client, port int, path, proto string, events chan<- string) {
	event := func(i int) string { return fmt.Sprintf("event %d %s", i, strings.Repeat("x", 600+i*100)) }
	if path != "sse" {
		events <- event(0)
	}
	req, _ := http.NewRequest("GET", fmt.Sprintf("https://localhost:%d/%s?ch=%s", port, path, url.QueryEscape(path+" "+proto)), nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ce := resp.Header.Get("Content-Encoding"); ce != "gzip" {
		t.Fatalf("Content-Encoding %q, want gzip", ce)
	}
	var zr *gzip.Reader
	var lines *bufio.Reader
	for i := 0; i < 3; i++ {
		ev := event(i)
		if i > 0 || path == "sse" {
			events <- ev
		}
		if zr == nil {
			// The gzip header arrives with the first event.
			if zr, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
			lines = bufio.NewReader(zr)
		}
		line, err := lines.ReadString('\n')
		if err != nil || line != "data: "+ev+"\n" {
			t.Fatalf("event %d: %q %v", i, line, err)
		}
		if blank, err := lines.ReadString('\n'); err != nil || blank != "\n" {
			t.Fatalf("event %d end: %q %v", i, blank, err)
		}
	}
}

// bigText is the encode memory tests' response: text that compresses
// to about three quarters (a long stream of pseudo-random letters), so
// that what the client leaves unread is megabytes of encoded bytes.
const bigText = 64 << 20

// textPattern fills p with the text's bytes from offset off on.
func textPattern(p []byte, off int64) {
	for i := range p {
		// splitmix64 of the offset: no pattern an encoder could find.
		x := uint64(off+int64(i)) * 0x9e3779b97f4a7c15
		x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
		x = (x ^ x>>27) * 0x94d049bb133111eb
		x ^= x >> 31
		p[i] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n<>"[x%64]
	}
}

func textSum() []byte {
	h := sha256.New()
	buf := make([]byte, 32<<10)
	for off := int64(0); off < bigText; off += int64(len(buf)) {
		textPattern(buf, off)
		h.Write(buf)
	}
	return h.Sum(nil)
}

// bigTextOrigin serves bigText bytes of text/plain, 32 KiB per write,
// chunked; written counts the bytes its socket took.
func bigTextOrigin(t *testing.T) (string, *atomic.Int64) {
	var written atomic.Int64
	addr := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		buf := make([]byte, 32<<10)
		for off := int64(0); off < bigText; off += int64(len(buf)) {
			textPattern(buf, off)
			if _, err := w.Write(buf); err != nil {
				return
			}
			written.Add(int64(len(buf)))
		}
	}))
	return addr, &written
}

// decoder reads the decoded body of encoding from r.
func decoder(encoding string, r io.Reader) (io.Reader, func(), error) {
	if encoding == "gzip" {
		zr, err := gzip.NewReader(r)
		return zr, func() {}, err
	}
	zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, nil, err
	}
	return zr, zr.Close, nil
}

// gate passes a reader's bytes until at of them went through, then
// reports reached and waits for open.
type gate struct {
	r             io.Reader
	n, at         int64
	reached, open chan struct{}
}

func (g *gate) Read(p []byte) (int, error) {
	if g.n >= g.at && g.reached != nil {
		close(g.reached)
		g.reached = nil
		<-g.open
	}
	if g.n < g.at && int64(len(p)) > g.at-g.n {
		p = p[:g.at-g.n]
	}
	k, err := g.r.Read(p)
	g.n += int64(k)
	return k, err
}

// TestEncodeSlowClient: a 64 MiB response encoded for a client that
// reads 1 MiB of it and pauses. The origin is held back, pollproxy's
// heap stays bounded (the encoder's state and a slice of output, not the
// response), and the rest then arrives intact: gzip over HTTP/1.1, zstd
// over HTTP/2 with the client's windows.
func TestEncodeSlowClient(t *testing.T) {
	sum := textSum()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, x := range []struct{ proto, encoding string }{{"h1.1", "gzip"}, {"h2", "zstd"}} {
			t.Run(x.proto, func(t *testing.T) {
				o, written := bigTextOrigin(t)
				port, cls := startSite(t, backend, "\tencode\n\treverse_proxy "+o)
				hw := servertest.WatchHeap(t)
				var body io.Reader
				if x.proto == "h2" {
					body = h2Get(t, port, "/big", x.encoding)
				} else {
					req, _ := http.NewRequest("GET", fmt.Sprintf("https://localhost:%d/big", port), nil)
					req.Header.Set("Accept-Encoding", x.encoding)
					cls[x.proto].Timeout = time.Minute
					resp, err := cls[x.proto].Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					if ce := resp.Header.Get("Content-Encoding"); ce != x.encoding {
						t.Fatalf("Content-Encoding %q", ce)
					}
					body = resp.Body
				}
				g := &gate{r: body, at: 1 << 20, reached: make(chan struct{}), open: make(chan struct{})}
				reached := g.reached
				done := make(chan error, 1)
				h := sha256.New()
				var decodedLen int64
				go func() {
					dec, closeDec, err := decoder(x.encoding, g)
					if err != nil {
						done <- err
						return
					}
					defer closeDec()
					decodedLen, err = io.Copy(h, dec)
					done <- err
				}()
				select {
				case <-reached:
				case err := <-done:
					t.Fatalf("the body ended before 1 MiB: %v", err)
				}
				stalled := servertest.AwaitStall(written)
				paused := hw.Growth()
				close(g.open)
				if err := <-done; err != nil {
					t.Fatalf("decoding: %v", err)
				}
				peak := hw.Stop()
				t.Logf("64 MiB %s response, paused after 1 MiB encoded: origin stalled after %.1f MiB, heap growth %.1f MiB paused, %.1f MiB peak",
					x.encoding, float64(stalled)/(1<<20), float64(paused)/(1<<20), float64(peak)/(1<<20))
				if decodedLen != bigText || !bytes.Equal(h.Sum(nil), sum) {
					t.Fatalf("decoded %d bytes, not the response sent", decodedLen)
				}
				// The kernel's socket buffers on both legs hold tens of
				// megabytes on loopback, but not the whole response; the
				// heap is what pollproxy (and this test's client) holds.
				if stalled >= bigText {
					t.Errorf("the origin wrote all %d MiB while the client paused", bigText>>20)
				}
				if peak > 8<<20 {
					t.Fatalf("heap grew by %.1f MiB carrying a 64 MiB response", float64(peak)/(1<<20))
				}
			})
		}
	})
}

// h2Get GETs path over HTTP/2 with a client of its own that grants the
// window back only as its body is read, so a paused reader holds the
// stream back; it returns the body, after checking the encoding.
func h2Get(t *testing.T, port int, path, encoding string) io.Reader {
	t.Helper()
	conn, err := stdtls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &stdtls.Config{ServerName: "localhost", InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(time.Minute))
	io.WriteString(conn, http2.ClientPreface)
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", path}, {"accept-encoding", encoding}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: true})
	b := &h2Body{t: t, fr: fr}
	for {
		f := b.frame()
		if h, ok := f.(*http2.MetaHeadersFrame); ok && h.StreamID == 1 {
			if st := h.PseudoValue("status"); st != "200" {
				t.Fatalf("status %s", st)
			}
			var ce string
			for _, hf := range h.RegularFields() {
				if hf.Name == "content-encoding" {
					ce = hf.Value
				}
			}
			if ce != encoding {
				t.Fatalf("content-encoding %q, want %q", ce, encoding)
			}
			return b
		}
	}
}

// h2Body reads stream 1's DATA, returning each frame's window once its
// bytes were read.
type h2Body struct {
	t             *testing.T
	fr            *http2.Framer
	data          []byte
	done          bool
	frames, bytes int
	owed          uint32 // window not yet given back
}

func (b *h2Body) frame() http2.Frame {
	f, err := b.fr.ReadFrame()
	if err != nil {
		b.t.Errorf("read frame: %v", err)
		return nil
	}
	switch f := f.(type) {
	case *http2.SettingsFrame:
		if !f.IsAck() {
			b.fr.WriteSettingsAck()
		}
	case *http2.PingFrame:
		if !f.IsAck() {
			b.fr.WritePing(true, f.Data)
		}
	}
	return f
}

func (b *h2Body) Read(p []byte) (int, error) {
	for len(b.data) == 0 {
		if b.done {
			return 0, io.EOF
		}
		f := b.frame()
		if f == nil {
			return 0, io.ErrUnexpectedEOF
		}
		switch f := f.(type) {
		case *http2.DataFrame:
			b.data = append(b.data[:0], f.Data()...)
			b.frames++
			b.bytes += len(f.Data())
			b.done = f.StreamEnded()
			// Credit goes back in batches: a WINDOW_UPDATE per small
			// frame is what pollproxy counts as a glitch.
			if b.owed += uint32(len(f.Data())); b.owed >= 16<<10 {
				b.fr.WriteWindowUpdate(0, b.owed)
				b.fr.WriteWindowUpdate(1, b.owed)
				b.owed = 0
			}
		case *http2.RSTStreamFrame:
			return 0, fmt.Errorf("stream reset: %v", f.ErrCode)
		case *http2.GoAwayFrame:
			return 0, fmt.Errorf("GOAWAY %v %q after %d frames %d bytes", f.ErrCode, f.DebugData(), b.frames, b.bytes)
		}
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

// TestEncodeWebSocket: a WebSocket's handshake and tunnel pass through
// encode untouched, whatever the client accepts: the 101 has no
// Content-Encoding and a message well over minimum_length echoes intact.
func TestEncodeWebSocket(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, "\tencode\n\treverse_proxy "+streamOrigin(t))
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, resp, err := websocket.Dial(ctx, fmt.Sprintf("wss://localhost:%d/ws", port), &websocket.DialOptions{
			HTTPClient: cls["h1.1"], HTTPHeader: http.Header{"Accept-Encoding": {"zstd, gzip"}}})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.CloseNow()
		if ce := resp.Header.Get("Content-Encoding"); ce != "" {
			t.Errorf("101 with Content-Encoding %q", ce)
		}
		for i := 0; i < 2; i++ {
			if err := echo(c, strings.Repeat("tunnel bytes are not encoded ", 150)); err != nil {
				t.Fatal(err)
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	})
}

// TestEncodeHandleResponse: encode covers a reverse_proxy with
// handle_response and a forward_auth as any proxied response, as in
// Caddy, where both write to the encoder's writer: a response no
// matcher picks, an auth service's refusal that goes to the client, and
// the response copy_response sends after all are all encoded.
func TestEncodeHandleResponse(t *testing.T) {
	o := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		switch {
		case strings.HasPrefix(r.URL.Path, "/missing/"):
			w.WriteHeader(404)
		case r.URL.Path == "/auth":
			w.WriteHeader(401)
		}
		w.Write(encodePage)
	}))
	site := fmt.Sprintf(`	encode gzip
	handle /fa/* {
		forward_auth %[1]s {
			uri /auth
		}
		respond "never"
	}
	reverse_proxy %[1]s {
		@nf status 404
		handle_response @nf {
			copy_response
		}
	}`, o)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		gz := map[string]string{"Accept-Encoding": "gzip"}
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []encodeCase{
					{name: "passed", path: "/page", header: gz, status: 200, encoding: "gzip", body: encodePage},
					{name: "copied", path: "/missing/page", header: gz, status: 404, encoding: "gzip", body: encodePage},
					{name: "refused", path: "/fa/page", header: gz, status: 401, encoding: "gzip", body: encodePage},
				} {
					x.run(t, c, base)
				}
			})
		}
	})
}
