package proxy_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// wsOrigin is an HTTP/2 WebSocket origin written frame by frame (x/net's
// server takes extended CONNECT only under a GODEBUG read at start): it
// advertises SETTINGS_ENABLE_CONNECT_PROTOCOL when connect is set,
// answers an extended CONNECT for websocket with 200, and echoes every
// WebSocket message on the stream (unmasked, as a server sends them); a
// close frame is echoed with END_STREAM. heads gets each CONNECT's
// fields, ends a note for each client END_STREAM.
type wsOrigin struct {
	addr  string
	conns atomic.Int64
	heads chan []hpack.HeaderField
	ends  chan uint32
}

func newWSOrigin(t *testing.T, connect bool) *wsOrigin {
	o := &wsOrigin{heads: make(chan []hpack.HeaderField, 16), ends: make(chan uint32, 16)}
	var settings []http2.Setting
	if connect {
		settings = append(settings, http2.Setting{ID: http2.SettingEnableConnectProtocol, Val: 1})
	}
	o.addr = serveLoopback(t, &o.conns, func(nc net.Conn) { o.serve(nc, settings) })
	return o
}

func (o *wsOrigin) serve(nc net.Conn, settings []http2.Setting) {
	preface := make([]byte, len(http2.ClientPreface))
	if _, err := io.ReadFull(nc, preface); err != nil {
		return
	}
	fr := http2.NewFramer(nc, nc)
	fr.WriteSettings(settings...)
	dec := hpack.NewDecoder(4096, nil)
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	bufs := map[uint32][]byte{}
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				return
			}
			o.heads <- fields
			status := "404"
			for _, hf := range fields {
				if hf.Name == ":protocol" && hf.Value == "websocket" {
					status = "200"
				}
			}
			hb.Reset()
			enc.WriteField(hpack.HeaderField{Name: ":status", Value: status})
			enc.WriteField(hpack.HeaderField{Name: "x-origin", Value: "h2"})
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: hb.Bytes(), EndHeaders: true, EndStream: status != "200"})
		case *http2.DataFrame:
			id := f.StreamID
			if n := len(f.Data()); n > 0 {
				fr.WriteWindowUpdate(0, uint32(n))
				fr.WriteWindowUpdate(id, uint32(n))
			}
			b := append(bufs[id], f.Data()...)
			for {
				op, p, rest, ok := wsParseMasked(b)
				if !ok {
					break
				}
				b = rest
				fr.WriteData(id, op == 8, wsServerFrame(op, p))
			}
			bufs[id] = b
			if f.StreamEnded() {
				o.ends <- id
			}
		}
	}
}

// wsParseMasked cuts one masked client frame off b, unmasked.
func wsParseMasked(b []byte) (op byte, payload, rest []byte, ok bool) {
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
	if b[1]&0x80 == 0 || len(b) < h+4+n {
		return 0, nil, b, false
	}
	mask := b[h : h+4]
	payload = make([]byte, n)
	for i := range payload {
		payload[i] = b[h+4+i] ^ mask[i%4]
	}
	return op, payload, b[h+4+n:], true
}

// wsServerFrame is an unmasked server frame.
func wsServerFrame(op byte, payload []byte) []byte {
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126, byte(n>>8), byte(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	return append(b, payload...)
}

func headValue(fs []hpack.HeaderField, name string) (string, bool) {
	for _, f := range fs {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// TestH2CWebSocket: WebSockets to an h2c origin that allows extended
// CONNECT go as RFC 8441 streams on one shared origin connection. A real
// WebSocket client over HTTP/1.1 (its Sec-WebSocket-Accept answered by
// pollproxy) and an h2 client's extended CONNECT both echo through it
// side by side, the origin sees a CONNECT with :protocol websocket and no
// key, and each close handshake ends the client's direction with
// END_STREAM at the origin.
func TestH2CWebSocket(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newWSOrigin(t, true)
		e, up := startH2C(t, backend, o.addr)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()

		ws := wsDial(t, ctx, e, e.h1Client(), "/ws")
		head := <-o.heads
		want := map[string]string{":method": "CONNECT", ":protocol": "websocket", ":scheme": "http", ":path": "/ws", "sec-websocket-version": "13"}
		for k, v := range want {
			if got, _ := headValue(head, k); got != v {
				t.Errorf("origin saw %s %q, want %q (%v)", k, got, v, head)
			}
		}
		for _, k := range []string{"sec-websocket-key", "connection", "upgrade"} {
			if _, ok := headValue(head, k); ok {
				t.Errorf("origin saw %s (%v)", k, head)
			}
		}

		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		c.connect(1, "websocket", "sec-websocket-version", "13")
		if st, fields := c.status(1); st != "200" {
			t.Fatalf("h2 client: status %s %v", st, fields)
		}
		<-o.heads

		var buf []byte
		for i := 0; i < 2000; i++ {
			msg := fmt.Sprintf("message %d %s", i, strings.Repeat("x", i%300))
			if err := ws.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			c.fr.WriteData(1, false, wsFrame(1, []byte("h2 "+msg)))
			typ, got, err := ws.Read(ctx)
			if err != nil || typ != websocket.MessageText || string(got) != msg {
				t.Fatalf("h1 echo %d: %v %q", i, err, got)
			}
			for {
				op, p, rest, ok := wsParse(buf)
				if ok {
					if op != 1 || string(p) != "h2 "+msg {
						t.Fatalf("h2 echo %d: op %d %q", i, op, p)
					}
					buf = rest
					break
				}
				d, end, rst := c.readData(1, 1)
				if end || rst != 0 {
					t.Fatalf("h2 echo %d: stream ended (rst %v)", i, rst)
				}
				buf = append(buf, d...)
			}
		}
		if n := o.conns.Load(); n != 1 {
			t.Errorf("origin saw %d connections, want both tunnels on one", n)
		}

		// The h2 client's close: its close frame with END_STREAM, the
		// origin's close frame with END_STREAM back.
		c.fr.WriteData(1, true, wsFrame(8, []byte{0x03, 0xe8}))
		rest, end, rst := c.readData(1, -1)
		if !end || rst != 0 {
			t.Fatalf("no END_STREAM after the close handshake (rst %v)", rst)
		}
		if op, _, _, ok := wsParse(append(buf, rest...)); !ok || op != 8 {
			t.Fatalf("no close frame from the origin: %q", rest)
		}
		// The HTTP/1.1 client's close: the close handshake, then its EOF
		// is the stream's END_STREAM at the origin.
		if err := ws.Close(websocket.StatusNormalClosure, "bye"); err != nil {
			t.Fatalf("close: %v", err)
		}
		for range 2 {
			select {
			case <-o.ends:
			case <-time.After(20 * time.Second):
				t.Fatal("the origin never saw a client's END_STREAM")
			}
		}
		if s := up.Stats(); s.OpenConns != 1 {
			t.Errorf("open origin connections %d, want the shared one kept", s.OpenConns)
		}
	})
}

// TestH2CWebSocketRefused: an h2c origin that does not allow extended
// CONNECT gets a WebSocket's client a 502, from either front end, as in
// Caddy; an origin's non-2xx answer to the CONNECT is an ordinary
// response.
func TestH2CWebSocketRefused(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := newWSOrigin(t, false)
		e, _ := startH2C(t, backend, o.addr)
		_, res, err := websocket.Dial(context.Background(), "wss://"+e.addr+"/ws", &websocket.DialOptions{HTTPClient: e.h1Client()})
		if err == nil || res == nil || res.StatusCode != 502 {
			t.Fatalf("h1 client: %v %v", err, res)
		}
		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		c.connect(1, "websocket", "sec-websocket-version", "13")
		if st, _ := c.status(1); st != "502" {
			t.Fatalf("h2 client, settled connection: %s", st)
		}
		select {
		case h := <-o.heads:
			t.Fatalf("the origin got a CONNECT it did not allow: %v", h)
		default:
		}

		o2 := newWSOrigin(t, true)
		e2, _ := startH2C(t, backend, o2.addr)
		c2 := dialH2Raw(t, e2.addr, e2.tlsConfig("h2"))
		c2.connect(1, "chat", "sec-websocket-version", "13")
		if st, _ := c2.status(1); st != "404" {
			t.Fatalf("origin's 404 to the CONNECT: %s", st)
		}
	})
}
