package proxy_test

import (
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// Clients with large windows (browsers open megabytes; h2load and nghttp a
// gigabyte) let pollproxy send as fast as the origin and the socket allow,
// which is where a stream waiting for OnWritable, or a parser waiting to be
// fed the end of a body, can be forgotten. Several connections each keep
// several 1 MiB downloads in flight; every one must end, complete.
func TestLargeResponsesLargeWindows(t *testing.T) {
	const size = 1 << 20
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	goOrigin := newOrigin(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(size))
		w.Write(body)
	})
	origins := map[string]string{"go": goOrigin.addr}
	// nginx writes the head, then the file with sendfile: the body arrives
	// in large reads apart from the head.
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "big"), body, 0o644); err != nil {
		t.Fatal(err)
	}
	origins["nginx"] = startNginx(t, root)
	for name, addr := range origins {
		t.Run(name, func(t *testing.T) {
			polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
				e := startProxy(t, backend, 1, proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}})
				const conns, inFlight, perConn = 4, 4, 24
				var wg sync.WaitGroup
				errs := make(chan error, conns)
				for i := 0; i < conns; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						errs <- e.downloadBigWindows(perConn, inFlight, size)
					}()
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
			})
		})
	}
}

// downloadBigWindows runs n GETs of /big on one connection, inFlight at a
// time, with 1 GiB windows, and checks each response's length.
func (e *proxyEnv) downloadBigWindows(n, inFlight, size int) error {
	c, err := stdtls.Dial("tcp", e.addr, e.tlsConfig("h2"))
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(20 * time.Second))
	c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c)
	fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<30 - 1})
	fr.WriteWindowUpdate(0, 1<<30-1-65535)
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	next := uint32(1)
	open := map[uint32]int{}
	start := func() {
		hbuf.Reset()
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/big"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: next, BlockFragment: hbuf.Bytes(), EndStream: true, EndHeaders: true})
		open[next] = 0
		next += 2
	}
	started, done := 0, 0
	for ; started < inFlight; started++ {
		start()
	}
	var windowed int
	for done < n {
		f, err := fr.ReadFrame()
		if err != nil {
			return fmt.Errorf("after %d of %d responses: %v (bytes per open stream: %v)", done, n, err, open)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.DataFrame:
			id := f.StreamID
			open[id] += len(f.Data())
			if windowed += len(f.Data()); windowed > 1<<28 {
				fr.WriteWindowUpdate(0, uint32(windowed))
				windowed = 0
			}
			if f.StreamEnded() {
				if open[id] != size {
					return fmt.Errorf("stream %d ended after %d bytes, want %d", id, open[id], size)
				}
				delete(open, id)
				done++
				if started < n {
					start()
					started++
				}
			}
		case *http2.RSTStreamFrame:
			return fmt.Errorf("stream %d reset: %v", f.StreamID, f.ErrCode)
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		}
	}
	return nil
}
