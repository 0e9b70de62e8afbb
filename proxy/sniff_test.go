package proxy_test

import (
	"bufio"
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

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

// A response without a Content-Type whose first body bytes come apart
// from the rest: the exchange keeps them until it has enough to sniff
// from, as Go's output buffer gathers them for Caddy. A client whose
// stream window (and send buffer) is smaller than what was kept takes a
// few of them, and then the rest, in order: the Content-Type is the page's,
// the body whole.
func TestSniffKeptBytesSmallWindow(t *testing.T) {
	page := "<!DOCTYPE html><html><body>" + strings.Repeat("kept, then sent in order. ", 80) + "</body></html>"
	addr := servertest.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if l != "\r\n" {
				continue
			}
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(page), page[:5])
			time.Sleep(20 * time.Millisecond) // so the rest most likely arrives apart
			fmt.Fprint(c, page[5:])
		}
	})
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		cfg := proxy.Config{Upstreams: []*upstream.Upstream{upstreamAt(t, addr)}}.WithDefaults()
		st := servertest.Start(t, backend, 1, func(l *netpoll.Loop) stream.Handler {
			return proxy.NewHandler(l, cfg)
		}, func(sc *server.Config) {
			sc.H2.StreamSendBuffer = 1 // so the stream takes fewer bytes than were kept
		})
		c, err := stdtls.Dial("tcp", st.Addr, &stdtls.Config{RootCAs: st.Roots, ServerName: "localhost", NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte(http2.ClientPreface))
		fr := http2.NewFramer(c, c)
		fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
		fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 3})
		var hbuf bytes.Buffer
		enc := hpack.NewEncoder(&hbuf)
		for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/page"}} {
			enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndStream: true, EndHeaders: true})
		var body []byte
		ctype, frames := "(none)", 0
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("after %d body bytes: %v", len(body), err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.MetaHeadersFrame:
				if v := f.PseudoValue("status"); v != "200" {
					t.Fatalf("status %s", v)
				}
				for _, hf := range f.RegularFields() {
					if hf.Name == "content-type" {
						ctype = hf.Value
					}
				}
			case *http2.DataFrame:
				body = append(body, f.Data()...)
				frames++
				if frames == 1 {
					// The first three bytes came; the rest may.
					fr.WriteWindowUpdate(1, 1<<20)
				}
				if f.StreamEnded() {
					if ctype != "text/html; charset=utf-8" {
						t.Errorf("Content-Type %q, want the sniffed text/html; charset=utf-8", ctype)
					}
					if string(body) != page {
						t.Errorf("body of %d bytes in %d frames, not the page's %d", len(body), frames, len(page))
					}
					return
				}
			case *http2.RSTStreamFrame:
				t.Fatalf("reset: %v", f.ErrCode)
			case *http2.GoAwayFrame:
				t.Fatalf("GOAWAY %v", f.ErrCode)
			}
		}
	})
}
