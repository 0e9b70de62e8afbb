package proxy_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"hash"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// bigMessage is the size of the WebSocket message the memory tests send.
const bigMessage = 16 << 20

// bigMessageOrigin is a real WebSocket origin that streams one
// bigMessage-byte binary message (the pattern, 32 KiB per write, so the
// origin itself holds no copy) and then waits for the client to close.
// written counts the bytes its socket took.
func bigMessageOrigin(t *testing.T) (*origin, *atomic.Int64) {
	var written atomic.Int64
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		mw, err := c.Writer(ctx, websocket.MessageBinary)
		if err != nil {
			return
		}
		if writePattern(mw, bigMessage, &written) != nil {
			return
		}
		if mw.Close() != nil {
			return
		}
		c.Read(ctx) // until the client closes
	})
	return o, &written
}

// checkBigMessage judges a slow read of the big message: it arrived
// intact, and pollproxy's heap never held more than a fraction of it.
func checkBigMessage(t *testing.T, stalled int64, paused, peak uint64, h hash.Hash) {
	t.Helper()
	t.Logf("16 MiB message to a paused reader: origin stalled after %.1f MiB, heap growth %.1f MiB paused, %.1f MiB peak",
		mib(uint64(stalled)), mib(paused), mib(peak))
	if !bytes.Equal(h.Sum(nil), patternSum(bigMessage)) {
		t.Fatal("the message arrived corrupted")
	}
	// The stall is logged, not judged: socket buffers on both legs are
	// the kernel's and may hold most of 16 MiB on loopback. The heap is
	// what pollproxy holds.
	if peak > 8<<20 {
		t.Fatalf("heap grew by %.1f MiB carrying a 16 MiB message", mib(peak))
	}
}

// TestWebSocketBigMessageSlowReaderH1: a 16 MiB WebSocket message to an
// HTTP/1.1 client that reads 1 MiB and pauses: the origin is held back,
// and pollproxy's heap stays bounded (the test runs the server in
// process and watches the heap), then the rest arrives intact.
func TestWebSocketBigMessageSlowReaderH1(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, written := bigMessageOrigin(t)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		hw := servertest.WatchHeap(t)
		c := wsDial(t, ctx, e, e.h1Client(), "/ws")
		defer c.CloseNow()
		typ, r, err := c.Reader(ctx)
		if err != nil || typ != websocket.MessageBinary {
			t.Fatalf("reader: %v %v", typ, err)
		}
		h := sha256.New()
		if _, err := io.CopyN(h, r, 1<<20); err != nil {
			t.Fatal(err)
		}
		stalled := servertest.AwaitStall(written)
		paused := hw.Growth()
		if n, err := io.Copy(h, r); err != nil || n != bigMessage-1<<20 {
			t.Fatalf("rest of the message: %d bytes, %v", n, err)
		}
		peak := hw.Stop()
		c.Close(websocket.StatusNormalClosure, "")
		checkBigMessage(t, stalled, paused, peak, h)
	})
}

// TestWebSocketBigMessageSlowReaderH2: the same over RFC 8441: the
// client's h2 windows hold the origin back.
func TestWebSocketBigMessageSlowReaderH2(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o, written := bigMessageOrigin(t)
		e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
		hw := servertest.WatchHeap(t)
		c := dialH2Raw(t, e.addr, e.tlsConfig("h2"))
		c.connect(1, "websocket", "sec-websocket-version", "13")
		if st, _ := c.status(1); st != "200" {
			t.Fatalf("status %s", st)
		}
		h := sha256.New()
		var buf []byte
		got := 0
		// take parses whole frames off buf into the hash.
		take := func() {
			for {
				op, p, rest, ok := wsParse(buf)
				if !ok {
					return
				}
				if op != 2 && op != 0 {
					t.Fatalf("frame op %d", op)
				}
				h.Write(p)
				got += len(p)
				buf = append(buf[:0], rest...)
			}
		}
		d, end, rst := c.readData(1, 1<<20)
		if end || rst != 0 {
			t.Fatalf("stream ended early (rst %v)", rst)
		}
		buf = append(buf, d...)
		take()
		stalled := servertest.AwaitStall(written)
		paused := hw.Growth()
		for got < bigMessage {
			d, end, rst := c.readData(1, 1)
			if end || rst != 0 {
				t.Fatalf("stream ended after %d bytes (rst %v)", got, rst)
			}
			buf = append(buf, d...)
			take()
		}
		peak := hw.Stop()
		checkBigMessage(t, stalled, paused, peak, h)
	})
}
