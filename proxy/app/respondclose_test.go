package app

import (
	"bufio"
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestRespondClose: respond's close ends the client connection after the
// answer, as Caddy's does: HTTP/1.1 says "connection: close" and closes;
// HTTP/2 sends GOAWAY (Go's server, which Caddy runs, does so for its
// "Connection: close"). An answer without close keeps the connection.
func TestRespondClose(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n}\n\nlocalhost:%d {\n\ttls %s %s\n\trespond /bye \"bye\" 403 {\n\t\tclose\n\t}\n\trespond \"hi\"\n}\n",
			backend, filepath.Join(dir, "storage"), port, certFile, keyFile)), 0o644)
		start(t, file, Options{})
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		dial := func(proto string) *stdtls.Conn {
			c, err := stdtls.Dial("tcp", addr, &stdtls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{proto}})
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second)) // a hung test fails rather than hangs
			return c
		}

		t.Run("h1", func(t *testing.T) {
			c := dial("http/1.1")
			defer c.Close()
			br := bufio.NewReader(c)
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			io.ReadAll(resp.Body)
			if resp.Close {
				t.Fatal("a plain respond closed the connection")
			}
			fmt.Fprintf(c, "GET /bye HTTP/1.1\r\nHost: localhost\r\n\r\n")
			resp, err = http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 403 || string(body) != "bye" || !resp.Close {
				t.Errorf("got %d %q close=%v, want 403 \"bye\" with connection: close", resp.StatusCode, body, resp.Close)
			}
			if n, err := br.Read(make([]byte, 1)); err != io.EOF {
				t.Errorf("after the answer: read %d, %v; want the connection closed", n, err)
			}
		})

		t.Run("h2", func(t *testing.T) {
			c := dial("h2")
			defer c.Close()
			c.Write([]byte(http2.ClientPreface))
			fr := http2.NewFramer(c, c)
			fr.WriteSettings()
			var hb bytes.Buffer
			enc := hpack.NewEncoder(&hb)
			for _, f := range [][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "localhost"}, {":path", "/bye"}} {
				enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
			}
			fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hb.Bytes(), EndStream: true, EndHeaders: true})
			var status string
			dec := hpack.NewDecoder(4096, func(f hpack.HeaderField) {
				if f.Name == ":status" {
					status = f.Value
				}
			})
			var last *http2.GoAwayFrame
			for {
				f, err := fr.ReadFrame()
				if err != nil { // the connection closed after its GOAWAY
					break
				}
				switch f := f.(type) {
				case *http2.HeadersFrame:
					dec.Write(f.HeaderBlockFragment())
				case *http2.SettingsFrame:
					if !f.IsAck() {
						fr.WriteSettingsAck()
					}
				case *http2.PingFrame:
					if !f.IsAck() {
						fr.WritePing(true, f.Data)
					}
				case *http2.GoAwayFrame:
					last = f
				}
			}
			if status != "403" {
				t.Errorf("status %q, want 403", status)
			}
			if last == nil || last.ErrCode != http2.ErrCodeNo || last.LastStreamID < 1 {
				t.Errorf("final GOAWAY %+v, want NO_ERROR naming stream 1 as served", last)
			}
		})
	})
}
