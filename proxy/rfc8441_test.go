package proxy_test

import (
	"bufio"
	"bytes"
	stdtls "crypto/tls"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

var debugFrames = false

// h2Raw is an HTTP/2 client speaking frames with x/net's Framer, so a test
// sends extended CONNECT, END_STREAM and RST_STREAM exactly when it wants.
type h2Raw struct {
	t        *testing.T
	conn     *stdtls.Conn
	fr       *http2.Framer
	enc      *hpack.Encoder
	hbuf     bytes.Buffer
	settings map[http2.SettingID]uint32
	unacked  map[uint32]int
}

func dialH2Raw(t *testing.T, addr string, cfg *stdtls.Config) *h2Raw {
	t.Helper()
	conn, err := stdtls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	c := &h2Raw{t: t, conn: conn, settings: map[http2.SettingID]uint32{}, unacked: map[uint32]int{}}
	io.WriteString(conn, http2.ClientPreface)
	c.fr = http2.NewFramer(conn, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.hbuf)
	c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	c.fr.WriteWindowUpdate(0, 1<<24)
	for {
		f := c.read()
		if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
			sf.ForeachSetting(func(s http2.Setting) error { c.settings[s.ID] = s.Val; return nil })
			c.fr.WriteSettingsAck()
			return c
		}
	}
}

func (c *h2Raw) read() http2.Frame {
	c.t.Helper()
	f, err := c.fr.ReadFrame()
	if err != nil {
		c.t.Fatalf("read frame: %v", err)
	}
	if debugFrames {
		c.t.Logf("frame %v", f)
	}
	return f
}

// headers sends a header block; pairs are name, value.
func (c *h2Raw) headers(id uint32, end bool, pairs ...string) {
	c.hbuf.Reset()
	for i := 0; i < len(pairs); i += 2 {
		c.enc.WriteField(hpack.HeaderField{Name: pairs[i], Value: pairs[i+1]})
	}
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.hbuf.Bytes(), EndHeaders: true, EndStream: end}); err != nil {
		c.t.Fatal(err)
	}
}

// connect opens an extended CONNECT stream for protocol.
func (c *h2Raw) connect(id uint32, protocol string, extra ...string) {
	c.headers(id, false, append([]string{":method", "CONNECT", ":protocol", protocol, ":scheme", "https",
		":path", "/ws", ":authority", "localhost"}, extra...)...)
}

// next reads until a frame for stream id (answering pings and window
// bookkeeping on the way) and returns it.
func (c *h2Raw) next(id uint32) http2.Frame {
	c.t.Helper()
	for {
		f := c.read()
		if f.Header().StreamID == id {
			if d, ok := f.(*http2.DataFrame); ok && len(d.Data()) > 0 {
				// Batched: tiny updates are glitches to pollproxy.
				c.unacked[id] += len(d.Data())
				c.unacked[0] += len(d.Data())
				for _, k := range []uint32{id, 0} {
					if c.unacked[k] >= 256<<10 {
						c.fr.WriteWindowUpdate(k, uint32(c.unacked[k]))
						c.unacked[k] = 0
					}
				}
			}
			return f
		}
	}
}

// sync sends a PING and reads until its acknowledgement, returning the
// other frames read on the way: everything the server wrote before it
// handled the PING.
func (c *h2Raw) sync() (before []http2.Frame) {
	c.t.Helper()
	data := [8]byte{'s', 'y', 'n', 'c'}
	if err := c.fr.WritePing(false, data); err != nil {
		c.t.Fatal(err)
	}
	for {
		f := c.read()
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() && p.Data == data {
			return before
		}
		if f.Header().StreamID != 0 {
			before = append(before, f)
		}
	}
}

// status reads the response head of stream id.
func (c *h2Raw) status(id uint32) (string, []hpack.HeaderField) {
	c.t.Helper()
	switch f := c.next(id).(type) {
	case *http2.MetaHeadersFrame:
		return f.PseudoValue("status"), f.RegularFields()
	case *http2.RSTStreamFrame:
		return "RST " + f.ErrCode.String(), nil
	default:
		c.t.Fatalf("stream %d: %T instead of a head", id, f)
	}
	return "", nil
}

// readData collects DATA on stream id until n bytes or END_STREAM; end
// reports END_STREAM, rst a reset.
func (c *h2Raw) readData(id uint32, n int) (got []byte, end bool, rst http2.ErrCode) {
	for len(got) < n || n < 0 {
		switch f := c.next(id).(type) {
		case *http2.DataFrame:
			got = append(got, f.Data()...)
			if f.StreamEnded() {
				return got, true, 0
			}
		case *http2.RSTStreamFrame:
			return got, false, f.ErrCode
		}
	}
	return got, false, 0
}

// wsFrame is a masked client WebSocket frame (RFC 6455 §5.2).
func wsFrame(op byte, payload []byte) []byte {
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	case n < 1<<16:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	default:
		b = append(b, 0x80|127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	mask := [4]byte{1, 2, 3, 4}
	b = append(b, mask[:]...)
	for i, c := range payload {
		b = append(b, c^mask[i%4])
	}
	return b
}

// wsParse cuts one unmasked server frame off b.
func wsParse(b []byte) (op byte, payload, rest []byte, ok bool) {
	if len(b) < 2 {
		return 0, nil, b, false
	}
	op = b[0] & 0x0f
	n, h := int(b[1]&0x7f), 2
	switch n {
	case 126:
		if len(b) < 4 {
			return 0, nil, b, false
		}
		n, h = int(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		if len(b) < 10 {
			return 0, nil, b, false
		}
		n, h = int(binary.BigEndian.Uint64(b[2:])), 10
	}
	if len(b) < h+n {
		return 0, nil, b, false
	}
	return op, b[h : h+n], b[h+n:], true
}

// TestRFC8441WebSocketEcho: an h2 client opens a WebSocket with extended
// CONNECT (RFC 8441) through pollproxy to a real WebSocket origin, which
// only speaks HTTP/1.1: pollproxy's key is accepted, the client gets 200,
// 10,000 echoes flow in DATA frames, and the close handshake ends both
// directions with END_STREAM.
func TestRFC8441WebSocketEcho(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, ended := echoOrigin(t)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		if c.settings[http2.SettingEnableConnectProtocol] != 1 {
			t.Fatalf("SETTINGS %v: no ENABLE_CONNECT_PROTOCOL", c.settings)
		}
		c.connect(1, "websocket", "sec-websocket-version", "13")
		st, fields := c.status(1)
		if st != "200" {
			t.Fatalf("status %s", st)
		}
		for _, f := range fields {
			if f.Name == "sec-websocket-accept" || f.Name == "upgrade" || f.Name == "connection" {
				t.Fatalf("h2 response carries %s", f.Name)
			}
		}
		var buf []byte
		for i := 0; i < 10000; i++ {
			msg := fmt.Sprintf("h2 message %d %s", i, strings.Repeat("y", i%200))
			c.fr.WriteData(1, false, wsFrame(1, []byte(msg)))
			for {
				op, p, rest, ok := wsParse(buf)
				if ok {
					if op != 1 || string(p) != msg {
						t.Fatalf("echo %d: op %d %q", i, op, p)
					}
					buf = rest
					break
				}
				d, end, rst := c.readData(1, 1)
				if end || rst != 0 {
					t.Fatalf("echo %d: stream ended (rst %v)", i, rst)
				}
				buf = append(buf, d...)
			}
		}
		// Close handshake: our close frame and END_STREAM; the origin
		// answers with its close frame and closes, which is END_STREAM.
		c.fr.WriteData(1, true, wsFrame(8, []byte{0x03, 0xe8}))
		rest, end, rst := c.readData(1, -1)
		if !end || rst != 0 {
			t.Fatalf("no END_STREAM after the close handshake (rst %v)", rst)
		}
		if op, _, _, ok := wsParse(append(buf, rest...)); !ok || op != 8 {
			t.Fatalf("no close frame from the origin: %q", rest)
		}
		select {
		case err := <-ended:
			if websocket.CloseStatus(err) != websocket.StatusNormalClosure {
				t.Fatalf("origin saw %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("origin never saw the close")
		}
	})
}

// TestRFC8441Refusals: plain CONNECT is refused (pollproxy is no forward
// proxy); an origin whose Sec-WebSocket-Accept does not match pollproxy's
// key gets the client a 502; an origin that does not switch answers as
// usual.
func TestRFC8441Refusals(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		addr := servertest.ServeConns(t, func(conn net.Conn) {
			br := bufio.NewReader(conn)
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			if req.URL.Path == "/plain" {
				io.WriteString(conn, "HTTP/1.1 403 Forbidden\r\ncontent-length: 2\r\n\r\nno")
				return
			}
			io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Accept: bogus=\r\n\r\n")
			io.Copy(io.Discard, br)
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		c.headers(1, false, ":method", "CONNECT", ":authority", "example.com:443")
		if st, _ := c.status(1); st != "405" {
			t.Fatalf("plain CONNECT: %s", st)
		}
		c.connect(3, "websocket", "sec-websocket-version", "13")
		if st, _ := c.status(3); st != "502" {
			t.Fatalf("mismatched accept: %s", st)
		}
		c.headers(5, false, ":method", "CONNECT", ":protocol", "websocket", ":scheme", "https", ":path", "/plain", ":authority", "localhost")
		if st, _ := c.status(5); st != "403" {
			t.Fatalf("refused upgrade: %s", st)
		}
		// An ordinary h2 request carrying upgrade stays malformed.
		c.headers(7, true, ":method", "GET", ":scheme", "https", ":path", "/", ":authority", "localhost", "upgrade", "websocket")
		if st, _ := c.status(7); st != "RST PROTOCOL_ERROR" {
			t.Fatalf("GET with upgrade: %s", st)
		}
	})
}

// TestRFC8441HalfCloseAndReset: END_STREAM from the client is a
// shutdown(SHUT_WR) at the origin, which still answers; the origin's EOF
// is END_STREAM. A client RST_STREAM closes the origin connection; an
// origin that dies resets the stream.
func TestRFC8441HalfCloseAndReset(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		originSaw := make(chan string, 4)
		resetMe := make(chan struct{}, 1) // the origin read the line that asks for a reset
		addr := rawTunnelOrigin(t, func(c *net.TCPConn, br *bufio.Reader) {
			first, _ := br.ReadString('\n')
			switch first {
			case "half\n":
				all, err := io.ReadAll(br)
				if err != nil {
					return
				}
				fmt.Fprintf(c, "after EOF: %s", all)
				c.CloseWrite()
			case "reset-me\n":
				resetMe <- struct{}{}
				_, err := io.ReadAll(br)
				originSaw <- fmt.Sprint("read ended: ", err)
			case "die\n":
				c.SetLinger(0)
				c.Close()
			}
		})
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))

		c.connect(1, "x-raw")
		if st, _ := c.status(1); st != "200" {
			t.Fatalf("status %s", st)
		}
		c.fr.WriteData(1, false, []byte("half\n"))
		c.fr.WriteData(1, true, []byte("tail"))
		got, end, rst := c.readData(1, -1)
		if string(got) != "after EOF: tail" || !end || rst != 0 {
			t.Fatalf("half-close: %q end=%v rst=%v", got, end, rst)
		}

		c.connect(3, "x-raw")
		if st, _ := c.status(3); st != "200" {
			t.Fatalf("status %s", st)
		}
		c.fr.WriteData(3, false, []byte("reset-me\n"))
		<-resetMe
		c.fr.WriteRSTStream(3, http2.ErrCodeCancel)
		select {
		case s := <-originSaw:
			if s != "read ended: <nil>" && !strings.Contains(s, "reset") {
				t.Fatalf("origin: %s", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the origin connection outlived the client's RST_STREAM")
		}

		c.connect(5, "x-raw")
		if st, _ := c.status(5); st != "200" {
			t.Fatalf("status %s", st)
		}
		c.fr.WriteData(5, false, []byte("die\n"))
		if _, end, rst := c.readData(5, -1); end || rst == 0 {
			t.Fatalf("origin died: end=%v rst=%v, want a reset", end, rst)
		}
	})
}

// TestRFC8441Off: with extended CONNECT switched off the setting is not
// advertised and :protocol makes a request malformed.
func TestRFC8441Off(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, _ := echoOrigin(t)
		cfg := proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}}.WithDefaults()
		st := servertest.Start(t, backend, 1, func(l *netpoll.Loop) stream.Handler {
			return proxy.NewHandler(l, cfg)
		}, func(sc *server.Config) { sc.H2.NoExtendedConnect = true })
		c := dialH2Raw(t, st.Addr, &stdtls.Config{RootCAs: st.Roots, ServerName: "localhost", NextProtos: []string{"h2"}})
		if _, ok := c.settings[http2.SettingEnableConnectProtocol]; ok {
			t.Fatal("ENABLE_CONNECT_PROTOCOL advertised while off")
		}
		c.connect(1, "websocket", "sec-websocket-version", "13")
		if s, _ := c.status(1); s != "RST PROTOCOL_ERROR" {
			t.Fatalf("status %s", s)
		}
	})
}
