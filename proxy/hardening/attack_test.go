package hardening

import (
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// heapBound is the HeapInuse growth allowed during an attack, for the whole
// test process (pollproxy, the origin and both clients). Every attack below
// pushes far more than this at the server (hundreds of MiB decoded or
// offered) if it were buffered.
const heapBound = 24 << 20

// attack runs fn, on every poller backend in turn, against a fresh
// pollproxy while a well-behaved client keeps fetching on another
// connection, and checks that HeapInuse never grew more than bound above
// its level before the attack.
func attack(t *testing.T, fresh bool, bound uint64, fn func(t *testing.T, e *env)) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		e := startProxy(t, backend, goodOrigin(t), setup{})
		if st, _, err := e.get("/"); err != nil || st != 200 {
			t.Fatalf("warm-up: %d %v", st, err)
		}
		p := e.probe(fresh)
		time.Sleep(20 * time.Millisecond)
		h := servertest.WatchHeap(t)
		fn(t, e)
		growth := h.Stop()
		t.Logf("heap in use: base %.1f MiB, peak growth %.1f MiB (bound %.0f MiB)",
			mib(h.Base()), mib(growth), mib(bound))
		if growth > bound {
			t.Errorf("heap grew by %.1f MiB during the attack, bound %.0f MiB", mib(growth), mib(bound))
		}
		p.check(t)
	})
}

// Rapid Reset (CVE-2023-44487): open a stream and reset it at once, over
// and over. Each stream reaches the origin, so the cost is real.
func TestAttackRapidReset(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		rc := e.dialH2(t)
		<-rc.flood(100000, func(i int) error {
			id := uint32(2*i + 1)
			return rc.do(func(fr *http2.Framer) error {
				if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id,
					BlockFragment: rc.block(getReq(e, "/slow")...), EndStream: true, EndHeaders: true}); err != nil {
					return err
				}
				return fr.WriteRSTStream(id, http2.ErrCodeCancel)
			})
		})
		rc.expectGoAway(http2.ErrCodeEnhanceYourCalm, 5*time.Second)
	})
}

// CONTINUATION flood: a header block that never ends.
func TestAttackContinuationFlood(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		rc := e.dialH2(t)
		value := strings.Repeat("z", 8000)
		rc.do(func(fr *http2.Framer) error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block(getReq(e, "/")...)})
		})
		<-rc.flood(100000, func(i int) error {
			return rc.do(func(fr *http2.Framer) error {
				return fr.WriteContinuation(1, false, rc.block(fmt.Sprintf("x-flood-%d", i), value))
			})
		})
		rc.expectGoAway(http2.ErrCodeEnhanceYourCalm, 5*time.Second)
	})
}

// Empty CONTINUATION frames cost the attacker 9 bytes each.
func TestAttackEmptyContinuationFlood(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		rc := e.dialH2(t)
		rc.do(func(fr *http2.Framer) error {
			return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: rc.block(getReq(e, "/")...)})
		})
		<-rc.flood(100000, func(i int) error {
			return rc.do(func(fr *http2.Framer) error { return fr.WriteContinuation(1, false, nil) })
		})
		rc.expectGoAway(http2.ErrCodeEnhanceYourCalm, 5*time.Second)
	})
}

// HPACK bomb: a 4000-byte field enters the dynamic table, then a block
// references it 4000 times at one byte each (16 MB decoded from 4 KB).
// The request is refused with 431 and the connection stays usable.
func TestAttackHPACKBomb(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		rc := e.dialH2(t)
		big := strings.Repeat("b", 4000)
		rc.headers(1, true, getReq(e, "/", "x-bomb", big)...)
		if ev := rc.response(1); ev.status != "200" {
			t.Fatalf("first request: %+v", ev)
		}
		kv := getReq(e, "/")
		for i := 0; i < 4000; i++ {
			kv = append(kv, "x-bomb", big)
		}
		var n int
		rc.do(func(fr *http2.Framer) error {
			b := rc.block(kv...)
			n = len(b)
			// Split into frames the server accepts.
			first := true
			for len(b) > 0 {
				k := min(len(b), 16384)
				var err error
				if first {
					err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 3, BlockFragment: b[:k], EndStream: true, EndHeaders: k == len(b)})
				} else {
					err = fr.WriteContinuation(3, k == len(b), b[:k])
				}
				if err != nil {
					return err
				}
				first = false
				b = b[k:]
			}
			return nil
		})
		t.Logf("bomb block: %d bytes encoded, %d MB decoded", n, 4000*4032/1000000)
		if ev := rc.response(3); ev.status != "431" {
			t.Fatalf("bomb: %+v, want 431", ev)
		}
		rc.headers(5, true, getReq(e, "/")...)
		if ev := rc.response(5); ev.status != "200" {
			t.Fatalf("after the bomb: %+v", ev)
		}
	})
}

// Floods of legal frames that cost us work and the attacker nothing.
func TestAttackFrameFloods(t *testing.T) {
	cases := []struct {
		name  string
		setup func(e *env, rc *rawH2)
		frame func(fr *http2.Framer, i int) error
	}{
		{"SETTINGS", nil, func(fr *http2.Framer, i int) error { return fr.WriteSettings() }},
		{"PING", nil, func(fr *http2.Framer, i int) error { return fr.WritePing(false, [8]byte{byte(i), byte(i >> 8)}) }},
		{"empty DATA", func(e *env, rc *rawH2) {
			rc.headers(1, false, append(getReq(e, "/"), ":method", "POST")[2:]...)
		}, func(fr *http2.Framer, i int) error { return fr.WriteData(1, false, nil) }},
		{"WINDOW_UPDATE", nil, func(fr *http2.Framer, i int) error { return fr.WriteWindowUpdate(0, 1) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			attack(t, false, heapBound, func(t *testing.T, e *env) {
				rc := e.dialH2(t)
				if tc.setup != nil {
					tc.setup(e, rc)
				}
				<-rc.flood(200000, func(i int) error {
					return rc.do(func(fr *http2.Framer) error { return tc.frame(fr, i) })
				})
				rc.expectGoAway(http2.ErrCodeEnhanceYourCalm, 5*time.Second)
			})
		})
	}
}

// A client that opens its stream windows to zero and asks for large
// responses: pollproxy must stop reading the origin, not buffer 8 MiB per
// stream.
func TestAttackZeroWindowSlowReader(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		var conns []*rawH2
		for c := 0; c < 4; c++ {
			rc := e.dialH2(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
			conns = append(conns, rc)
			for i := 0; i < tMaxStreams; i++ {
				rc.headers(uint32(2*i+1), true, getReq(e, "/big")...)
			}
		}
		// 4 × 16 streams × 8 MiB offered = 512 MiB.
		time.Sleep(1500 * time.Millisecond)
		for _, rc := range conns {
			for _, ev := range rc.all() {
				if ev.typ == http2.FrameData && ev.n > 0 {
					t.Fatalf("DATA sent into a zero window: %+v", ev)
				}
			}
		}
	})
}

// More streams than SETTINGS_MAX_CONCURRENT_STREAMS: the extra one is
// refused, the others proceed.
func TestAttackTooManyStreams(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		rc := e.dialH2(t)
		post := append(getReq(e, "/")[2:], ":method", "POST")
		for i := 0; i < tMaxStreams; i++ {
			rc.headers(uint32(2*i+1), false, post...)
		}
		extra := uint32(2*tMaxStreams + 1)
		rc.headers(extra, true, getReq(e, "/")...)
		rc.expectRST(extra, http2.ErrCodeRefusedStream)
		// The open streams are still served once their bodies end.
		for i := 0; i < tMaxStreams; i++ {
			id := uint32(2*i + 1)
			rc.do(func(fr *http2.Framer) error { return fr.WriteData(id, true, []byte("x")) })
		}
		for i := 0; i < tMaxStreams; i++ {
			ev, ok := rc.wait(5*time.Second, func(ev frameEv) bool { return ev.typ == http2.FrameHeaders })
			if !ok || ev.status != "200" {
				t.Fatalf("stream after refusal: %+v", ev)
			}
		}
	})
}

// Slowloris on the TLS handshake: connections that send nothing, or half a
// ClientHello, are closed at the handshake timeout, and new clients (each
// request on a fresh connection, so a fresh handshake) still get in.
func TestAttackSlowlorisHandshake(t *testing.T) {
	attack(t, true, heapBound, func(t *testing.T, e *env) {
		const n = 200
		before := e.srv.Stats().HandshakeErrors
		var wg sync.WaitGroup
		var mu sync.Mutex
		var late []string
		start := time.Now()
		for i := 0; i < n; i++ {
			c, err := net.Dial("tcp", e.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if i%2 == 1 {
				// A TLS record header announcing a ClientHello that never comes.
				c.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01})
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := waitClosed(c, tHandshakeTimeout+3*time.Second); err != nil {
					mu.Lock()
					late = append(late, err.Error())
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		t.Logf("%d silent handshakes all closed after %v (timeout %v)", n, time.Since(start).Round(time.Millisecond), tHandshakeTimeout)
		if len(late) > 0 {
			t.Errorf("%d handshakes still open: %s", len(late), late[0])
		}
		if got := e.srv.Stats().HandshakeErrors - before; got < n/2 {
			t.Logf("handshake errors counted: %d", got)
		}
	})
}

// Slowloris on HTTP/1.1 headers: a byte every 100 ms gets 408 at the head
// timeout and a closed connection.
func TestAttackSlowlorisH1Headers(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		const n = 20
		var wg sync.WaitGroup
		errs := make(chan error, n)
		for i := 0; i < n; i++ {
			conn := e.dialH1(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				head := "GET / HTTP/1.1\r\nHost: localhost\r\nX-Slow: " + strings.Repeat("s", 100)
				stop := make(chan struct{})
				go func() {
					for i := 0; i < len(head); i++ {
						select {
						case <-stop:
							return
						case <-time.After(50 * time.Millisecond):
						}
						conn.SetWriteDeadline(time.Now().Add(time.Second))
						if _, err := conn.Write([]byte{head[i]}); err != nil {
							return
						}
					}
				}()
				defer close(stop)
				t0 := time.Now()
				st, err := readStatus(conn, tH1HeaderTimeout+3*time.Second)
				if err != nil || st != 408 {
					errs <- fmt.Errorf("status %d, %v", st, err)
					return
				}
				if d := time.Since(t0); d > tH1HeaderTimeout+time.Second {
					errs <- fmt.Errorf("408 after %v", d)
					return
				}
				if err := waitClosed(conn, 3*time.Second); err != nil {
					errs <- fmt.Errorf("not closed after 408: %v", err)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// Idle connections are closed: h2 with GOAWAY(NO_ERROR) after the idle
// timeout, h2 without a preface, and h1 between requests.
func TestAttackIdleConnections(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		var wg sync.WaitGroup
		wg.Add(3)
		go func() {
			defer wg.Done()
			rc := e.dialH2(t)
			t0 := time.Now()
			ev, ok := rc.wait(tH2IdleTimeout+3*time.Second, func(ev frameEv) bool { return ev.typ == http2.FrameGoAway })
			if !ok || ev.code != http2.ErrCodeNo {
				t.Errorf("idle h2: %+v, want GOAWAY NO_ERROR", ev)
				return
			}
			select {
			case <-rc.closed:
			case <-time.After(3 * time.Second):
				t.Errorf("idle h2: open after GOAWAY")
			}
			t.Logf("idle h2 connection closed after %v", time.Since(t0).Round(time.Millisecond))
		}()
		go func() {
			defer wg.Done()
			// TLS done, ALPN h2, then silence: no preface at all.
			conn, err := stdtlsDial(e, "h2")
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			if err := waitClosed(conn, tSettingsTimeout+tH2IdleTimeout+3*time.Second); err != nil {
				t.Errorf("h2 without preface: %v", err)
			}
		}()
		go func() {
			defer wg.Done()
			conn, err := stdtlsDial(e, "http/1.1")
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			conn.Write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"))
			if st, err := readStatus(conn, 3*time.Second); err != nil || st != 200 {
				t.Errorf("h1: %d %v", st, err)
				return
			}
			if err := waitClosed(conn, tH1IdleTimeout+3*time.Second); err != nil {
				t.Errorf("idle h1: %v", err)
			}
		}()
		wg.Wait()
	})
}

// Oversized headers: 431 on h2 for a list over the limit, a connection
// error for a block past twice the limit, 431 on h1.
func TestAttackOversizedHeaders(t *testing.T) {
	attack(t, false, heapBound, func(t *testing.T, e *env) {
		rc := e.dialH2(t)
		rc.headers(1, true, getReq(e, "/", "x-big", strings.Repeat("a", tMaxHeaderList+100))...)
		if ev := rc.response(1); ev.status != "431" {
			t.Fatalf("h2 list over the limit: %+v, want 431", ev)
		}
		rc.headers(3, true, getReq(e, "/")...)
		if ev := rc.response(3); ev.status != "200" {
			t.Fatalf("h2 after 431: %+v", ev)
		}

		rc2 := e.dialH2(t)
		rc2.do(func(fr *http2.Framer) error {
			b := rc2.block(getReq(e, "/", "x-huge", strings.Repeat("h", 3*tMaxHeaderList))...)
			if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:16384], EndStream: true}); err != nil {
				return err
			}
			for b = b[16384:]; len(b) > 0; {
				k := min(len(b), 16384)
				if err := fr.WriteContinuation(1, k == len(b), b[:k]); err != nil {
					return err
				}
				b = b[k:]
			}
			return nil
		})
		rc2.expectGoAway(http2.ErrCodeEnhanceYourCalm, 5*time.Second)

		conn := e.dialH1(t)
		conn.Write([]byte("GET / HTTP/1.1\r\nHost: localhost\r\nX-Big: " + strings.Repeat("a", tMaxHeadSize) + "\r\n\r\n"))
		if st, err := readStatus(conn, 3*time.Second); err != nil || st != 431 {
			t.Fatalf("h1 head over the limit: %d %v, want 431", st, err)
		}
		conn2 := e.dialH1(t)
		var many bytes.Buffer
		many.WriteString("GET / HTTP/1.1\r\nHost: localhost\r\n")
		for i := 0; i < 200; i++ {
			fmt.Fprintf(&many, "X-F%d: v\r\n", i)
		}
		many.WriteString("\r\n")
		conn2.Write(many.Bytes())
		if st, err := readStatus(conn2, 3*time.Second); err != nil || st != 431 {
			t.Fatalf("h1 with 200 fields: %d %v, want 431", st, err)
		}
	})
}

// muteAfterHello passes the client's first flight (the ClientHello) and
// silently drops everything it writes afterwards.
type muteAfterHello struct {
	net.Conn
	writes int
}

func (m *muteAfterHello) Write(p []byte) (int, error) {
	m.writes++
	if m.writes > 1 {
		return len(p), nil
	}
	return m.Conn.Write(p)
}

// Slowloris after the ClientHello: the client never sends its Finished, so
// a handshake worker waits for it until the timeout. The pool has many more
// workers than cores (256 at least) for this reason: the ~120 stalled
// handshakes here must not delay the well-behaved client's. An attacker
// holding more than the pool per timeout still delays handshakes, up to the
// bounded queue; beyond it connections are refused.
func TestAttackSlowlorisAfterHello(t *testing.T) {
	attack(t, true, heapBound, func(t *testing.T, e *env) {
		var conns []net.Conn
		deadline := time.Now().Add(1500 * time.Millisecond)
		for time.Now().Before(deadline) {
			for i := 0; i < 8; i++ {
				raw, err := net.Dial("tcp", e.addr)
				if err != nil {
					t.Fatal(err)
				}
				conns = append(conns, raw)
				c := stdtls.Client(&muteAfterHello{Conn: raw}, e.tlsConfig("h2"))
				go c.Handshake()
			}
			time.Sleep(100 * time.Millisecond)
		}
		for _, c := range conns {
			c.Close()
		}
	})
}
