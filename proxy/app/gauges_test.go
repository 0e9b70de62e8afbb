package app

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/metrics/atrest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestGaugesReturnToZero opens and closes tunnels (WebSockets over
// HTTP/1.1 Upgrade and RFC 8441), client connections (h2 and HTTP/1.1)
// and upstream connections, with the access log on and off and the
// metrics on, across a live poller switch with tunnels open, and then
// wants every gauge that counts live things back at 0 (the loops'
// descriptors and timers back where they started), under every poller
// label: a tunnel opened under one backend ends under the same label.
func TestGaugesReturnToZero(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, accessLog := range []bool{false, true} {
			t.Run(fmt.Sprintf("accesslog=%v", accessLog), func(t *testing.T) {
				gaugesAcrossSwitch(t, backend, accessLog)
			})
		}
	})
}

func gaugesAcrossSwitch(t *testing.T, backend string, accessLog bool) {
	dir := t.TempDir()
	certFile, keyFile, roots := filePair(t, dir)
	port, adminPort := servertest.FreePort(t), servertest.FreePort(t)
	admin := fmt.Sprintf("127.0.0.1:%d", adminPort)
	logBlock, siteLog := "", ""
	if accessLog {
		logBlock = fmt.Sprintf("\tlog {\n\t\toutput %s\n\t}\n", filepath.Join(dir, "access.log"))
		siteLog = "log"
	}
	file := filepath.Join(dir, "Caddyfile")
	// A short upstream keepalive lets the pooled connections close on
	// their own once the traffic stops.
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	loops 2
	admin %s
	storage %s
	default_bind 127.0.0.1
%s}

localhost:%d {
	%s
	reverse_proxy %s {
		transport http {
			keepalive 100ms
		}
	}
	tls %s %s
}
`, admin, filepath.Join(dir, "storage"), logBlock, port, siteLog, streamOrigin(t), certFile, keyFile)), 0o644)
	r := start(t, file, Options{Pollers: []string{backend}})
	base := fmt.Sprintf("https://localhost:%d", port)
	rest := gauges(t, admin)

	sc := newStreamClients(t, port, roots)
	// x/net's client, which speaks RFC 8441 extended CONNECT.
	h2c := countingH2(fmt.Sprintf("127.0.0.1:%d", port), roots, new(atomic.Int64))
	defer h2c.CloseIdleConnections()
	traffic := func(when string) {
		t.Helper()
		for _, c := range []*http.Client{sc.h1, sc.h2} {
			for i := 0; i < 4; i++ {
				resp, err := c.Get(base + "/")
				if err != nil {
					t.Fatalf("GET %s: %v", when, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}
	}

	// Tunnels open before the switch, on both loops (each connection
	// lands on the loop the kernel picks; several make both likely).
	var h1Tunnels []*websocket.Conn
	var h2Tunnels []*h2WebSocket
	for i := 0; i < 4; i++ {
		h1Tunnels = append(h1Tunnels, sc.ws(t, fmt.Sprintf("wss://localhost:%d/ws", port)))
		h2Tunnels = append(h2Tunnels, dialH2WebSocket(t, h2c, base+"/ws"))
	}
	traffic("before the switch")
	for i := range h1Tunnels {
		if err := echo(h1Tunnels[i], "before"); err != nil {
			t.Fatalf("HTTP/1.1 WebSocket %d before the switch: %v", i, err)
		}
		if err := h2Tunnels[i].echo("before"); err != nil {
			t.Fatalf("RFC 8441 WebSocket %d before the switch: %v", i, err)
		}
	}
	if m := gauges(t, admin); m.Sum("pollproxy_tunnels_active") != 8 {
		t.Errorf("pollproxy_tunnels_active with 8 tunnels open: %v", m.Series("pollproxy_tunnels_active"))
	}

	// The switch: half the tunnels end under the new backend, half
	// started and end after it.
	to := backend
	for _, n := range netpoll.Available() {
		if n != backend {
			to = n
			break
		}
	}
	if _, err := r.in.SwitchPollers([]string{backend, to}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		h1Tunnels[i].Close(websocket.StatusNormalClosure, "")
		h2Tunnels[i].close()
	}
	for i := 0; i < 2; i++ {
		h1Tunnels = append(h1Tunnels, sc.ws(t, fmt.Sprintf("wss://localhost:%d/ws", port)))
		h2Tunnels = append(h2Tunnels, dialH2WebSocket(t, h2c, base+"/ws"))
	}
	traffic("after the switch")
	for i := 2; i < len(h1Tunnels); i++ {
		if err := echo(h1Tunnels[i], "after"); err != nil {
			t.Fatalf("HTTP/1.1 WebSocket %d after the switch: %v", i, err)
		}
		if err := h2Tunnels[i].echo("after"); err != nil {
			t.Fatalf("RFC 8441 WebSocket %d after the switch: %v", i, err)
		}
	}
	for i := 2; i < len(h1Tunnels); i++ {
		h1Tunnels[i].Close(websocket.StatusNormalClosure, "")
		h2Tunnels[i].close()
	}
	sc.h1.CloseIdleConnections()
	sc.h2.CloseIdleConnections()
	h2c.CloseIdleConnections()

	// Everything is closed on the client's side; the proxy learns of it
	// through its loops, the pooled upstream connections through their
	// keepalive: wait, boundedly, for the gauges to settle.
	var m atrest.Gauges
	servertest.Within(15*time.Second, func() bool {
		m = gauges(t, admin)
		return len(m.NotAtRest(rest)) == 0
	})
	if bad := m.NotAtRest(rest); len(bad) > 0 {
		t.Errorf("gauges not back at rest after the traffic ended:\n%s", strings.Join(bad, "\n"))
	}
	if s := m.Series("pollproxy_tunnels_active"); len(s) == 0 {
		t.Error("no pollproxy_tunnels_active series at all")
	}
}

// gauges scrapes the admin listener and keeps its pollproxy gauges.
func gauges(t *testing.T, admin string) atrest.Gauges {
	t.Helper()
	g, err := atrest.Parse(strings.NewReader(scrape(t, admin)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// h2WebSocket is a WebSocket over an RFC 8441 stream, framed by hand: a
// client's masked text frame out, the origin's unmasked one back.
type h2WebSocket struct {
	t    *testing.T
	out  *io.PipeWriter
	in   *bufio.Reader
	body io.Closer
}

func dialH2WebSocket(t *testing.T, c *http.Client, url string) *h2WebSocket {
	t.Helper()
	pr, pw := io.Pipe()
	req, _ := http.NewRequest("CONNECT", url, pr)
	req.Header.Set(":protocol", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("extended CONNECT %s: %v", url, err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("extended CONNECT %s: %s", url, resp.Status)
	}
	ws := &h2WebSocket{t: t, out: pw, in: bufio.NewReader(resp.Body), body: resp.Body}
	t.Cleanup(ws.close)
	return ws
}

// echo sends msg (under 126 bytes) and reads the echo back.
func (ws *h2WebSocket) echo(msg string) error {
	mask := [4]byte{1, 2, 3, 4}
	frame := append([]byte{0x81, 0x80 | byte(len(msg))}, mask[:]...)
	for i := 0; i < len(msg); i++ {
		frame = append(frame, msg[i]^mask[i%4])
	}
	if _, err := ws.out.Write(frame); err != nil {
		return err
	}
	var head [2]byte
	if _, err := io.ReadFull(ws.in, head[:]); err != nil {
		return err
	}
	n := int(head[1] & 0x7f)
	if n == 126 {
		var ext [2]byte
		if _, err := io.ReadFull(ws.in, ext[:]); err != nil {
			return err
		}
		n = int(binary.BigEndian.Uint16(ext[:]))
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(ws.in, got); err != nil {
		return err
	}
	if head[0] != 0x81 || string(got) != msg {
		return fmt.Errorf("echo %#x %q, want a text frame %q", head[0], got, msg)
	}
	return nil
}

// close ends the stream from the client's side, as a browser closing the
// tab would: both directions closed without a WebSocket close frame.
func (ws *h2WebSocket) close() {
	ws.out.Close()
	ws.body.Close()
}
