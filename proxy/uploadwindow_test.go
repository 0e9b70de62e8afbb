package proxy_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// An h2 upload through a long path (a delay relay on loopback, 100 ms of
// round trip) to an origin that reads as fast as it can: the receive
// windows pollproxy advertises must grow past the defaults (1 MiB per
// stream) and stay within the ceiling (32 MiB), and the body must arrive
// whole. The client is an http2.Framer that keeps pollproxy's credit and
// answers its PINGs.
func TestUploadWindowsGrowOverALongPath(t *testing.T) {
	const (
		defaultStream = 1 << 20
		ceiling       = 32 << 20
	)
	size := int64(48 << 20)
	if raceEnabled {
		size = 24 << 20
	}
	got := make(chan int64, 1)
	o := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		got <- n
		fmt.Fprint(w, n)
	})
	e := startProxy(t, "", 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, o.addr)}})
	conn := servertest.DialDelayed(t, e.addr, 50*time.Millisecond, e.tlsConfig("h2"))
	conn.SetDeadline(time.Now().Add(60 * time.Second))

	// The reader applies pollproxy's frames to the credit the writer
	// spends; frames are copied out of the Framer, which owns them only
	// until its next read.
	type credit struct {
		conn, stream int64
		setting      int64 // SETTINGS_INITIAL_WINDOW_SIZE
		maxSetting   int64
		maxConn      int64
		pings        int
		done         bool
		err          error
	}
	updates := make(chan func(*credit), 256)
	wfr := http2.NewFramer(conn, nil)
	writes := make(chan func(), 256) // frames the reader wants written
	go func() {
		rfr := http2.NewFramer(nil, conn)
		for {
			f, err := rfr.ReadFrame()
			if err != nil {
				updates <- func(c *credit) { c.err = err }
				return
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if f.IsAck() {
					continue
				}
				v, ok := f.Value(http2.SettingInitialWindowSize)
				updates <- func(c *credit) {
					if ok {
						c.stream += int64(v) - c.setting
						c.setting = int64(v)
						c.maxSetting = max(c.maxSetting, c.setting)
					}
				}
				writes <- func() { wfr.WriteSettingsAck() }
			case *http2.WindowUpdateFrame:
				id, inc := f.StreamID, int64(f.Increment)
				updates <- func(c *credit) {
					if id == 0 {
						c.conn += inc
						c.maxConn = max(c.maxConn, c.conn)
					} else {
						c.stream += inc
					}
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					data := f.Data
					updates <- func(c *credit) { c.pings++ }
					writes <- func() { wfr.WritePing(true, data) }
				}
			case *http2.HeadersFrame:
				end := f.StreamEnded()
				updates <- func(c *credit) { c.done = c.done || end }
			case *http2.DataFrame:
				end := f.StreamEnded()
				updates <- func(c *credit) { c.done = c.done || end }
			case *http2.GoAwayFrame, *http2.RSTStreamFrame:
				desc := fmt.Sprint(f)
				updates <- func(c *credit) { c.err = fmt.Errorf("pollproxy sent %s", desc) }
			}
		}
	}()

	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	wfr.WriteSettings()
	var hb bytes.Buffer
	enc := hpack.NewEncoder(&hb)
	for _, kv := range [][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/upload"},
		{"content-length", fmt.Sprint(size)}} {
		enc.WriteField(hpack.HeaderField{Name: kv[0], Value: kv[1]})
	}
	wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndHeaders: true})

	c := &credit{conn: 65535, stream: 65535, setting: 65535}
	apply := func(f func(*credit)) {
		f(c)
		if c.err != nil {
			t.Fatal(c.err)
		}
	}
	chunk := make([]byte, 16384)
	sent := int64(0)
	for sent < size {
		k := min(int64(len(chunk)), size-sent, c.conn, c.stream)
		if k <= 0 {
			select {
			case f := <-updates:
				apply(f)
			case w := <-writes:
				w()
			}
			continue
		}
		if c.conn > ceiling || c.stream > ceiling {
			t.Fatalf("credit conn %d stream %d beyond the %d ceiling", c.conn, c.stream, ceiling)
		}
		if err := wfr.WriteData(1, sent+k == size, chunk[:k]); err != nil {
			t.Fatal(err)
		}
		sent += k
		c.conn -= k
		c.stream -= k
		for drained := false; !drained; {
			select {
			case f := <-updates:
				apply(f)
			case w := <-writes:
				w()
			default:
				drained = true
			}
		}
	}
	for !c.done {
		select {
		case f := <-updates:
			apply(f)
		case w := <-writes:
			w()
		}
	}
	if n := <-got; n != size {
		t.Fatalf("origin read %d bytes, want %d", n, size)
	}
	t.Logf("%d PINGs; stream window up to %d, connection credit up to %d", c.pings, c.maxSetting, c.maxConn)
	if c.pings == 0 || c.maxSetting <= defaultStream {
		t.Fatalf("windows did not grow: %d PINGs, stream window %d", c.pings, c.maxSetting)
	}
	if c.maxSetting > ceiling || c.maxConn > ceiling {
		t.Fatalf("windows beyond the ceiling: stream %d, connection credit %d", c.maxSetting, c.maxConn)
	}
}
