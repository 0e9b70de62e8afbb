package app

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// sniffPage is an HTML page an origin sends without a Content-Type.
var sniffPage = "<!DOCTYPE html><html><body>" + strings.Repeat("sniffed, as Go's server sniffs. ", 30) + "</body></html>"

// sniffOrigin answers by the last path segment, writing each response by
// hand: /html (the page, a length, no type), /split (the same, its head
// with the page's first five bytes, then the rest), /chunked (plain text, chunked, head and first
// chunk in one write), /encoded (Content-Encoding br, no type), /empty
// (an empty Content-Type), /typed (text/css), /nocontent (204), /notmod
// (304).
func sniffOrigin(t *testing.T) string {
	return servertest.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			method, target, _ := strings.Cut(line, " ")
			target, _, _ = strings.Cut(target, " ")
			for {
				l, err := br.ReadString('\n')
				if err != nil {
					return
				}
				if l == "\r\n" {
					break
				}
			}
			name := target[strings.LastIndexByte(target, '/')+1:]
			head := "HTTP/1.1 200 OK\r\n"
			body := sniffPage
			switch name {
			case "encoded":
				head += "Content-Encoding: br\r\n"
				body = "\x8b\x00\x80not really brotli"
			case "empty":
				head += "Content-Type:\r\n"
			case "typed":
				head += "Content-Type: text/css\r\n"
			case "nocontent":
				fmt.Fprintf(c, "HTTP/1.1 204 No Content\r\n\r\n")
				continue
			case "notmod":
				fmt.Fprintf(c, "HTTP/1.1 304 Not Modified\r\n\r\n")
				continue
			case "chunked":
				fmt.Fprintf(c, "%sTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n", head)
				fmt.Fprintf(c, "b\r\n, plain one\r\n0\r\n\r\n")
				continue
			}
			if method == "HEAD" {
				fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n", head, len(body))
				continue
			}
			fmt.Fprintf(c, "%sContent-Length: %d\r\n\r\n", head, len(body))
			if name == "split" {
				// Sniffed alone, "<!DOC" would be text/plain.
				fmt.Fprint(c, body[:5])
				time.Sleep(20 * time.Millisecond) // so the rest most likely arrives apart
				body = body[5:]
			}
			fmt.Fprint(c, body)
		}
	})
}

// TestSniffContentType: a proxied response without a Content-Type gets
// the one Go's server, and so Caddy, sniffs from its first body bytes;
// never a response without body bytes (HEAD, 204, 304), nor one with a
// Content-Encoding, nor one whose Content-Type is there but empty; a
// type header_down removed is sniffed too, as in Caddy. A chunked
// response whose head comes alone goes on without a type as soon as the
// origin goes quiet, as Caddy flushes it.
func TestSniffContentType(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		quiet := map[string]chan struct{}{"h2": make(chan struct{}), "h1.1": make(chan struct{})}
		o := sniffOrigin(t)
		// /quiet: chunked, the head alone; the body once the test closes
		// the channel its query names.
		oq := servertest.ServeConns(t, func(c net.Conn) {
			br := bufio.NewReader(c)
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			for {
				l, err := br.ReadString('\n')
				if err != nil || l == "\r\n" {
					break
				}
			}
			fmt.Fprint(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
			_, q, _ := strings.Cut(strings.Fields(line)[1], "?p=")
			<-quiet[q]
			fmt.Fprint(c, "5\r\nhello\r\n0\r\n\r\n")
		})
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle /down/* {
		reverse_proxy %s {
			header_down -Content-Type
		}
	}
	handle /quiet {
		reverse_proxy %s
	}
	reverse_proxy %s`, o, oq, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		const none = "(none)"
		cases := []struct {
			method, path, ctype string
			status              int
			body                string
		}{
			{"GET", "/html", "text/html; charset=utf-8", 200, sniffPage},
			{"GET", "/split", "text/html; charset=utf-8", 200, sniffPage},
			{"GET", "/chunked", "text/plain; charset=utf-8", 200, "hello, plain one"},
			{"GET", "/encoded", none, 200, "\x8b\x00\x80not really brotli"},
			{"GET", "/empty", "", 200, sniffPage},
			{"GET", "/typed", "text/css", 200, sniffPage},
			{"GET", "/down/typed", "text/html; charset=utf-8", 200, sniffPage},
			{"HEAD", "/html", none, 200, ""},
			{"GET", "/nocontent", none, 204, ""},
			{"GET", "/notmod", none, 304, ""},
		}
		for proto, cl := range cls {
			for _, c := range cases {
				req, _ := http.NewRequest(c.method, base+c.path, nil)
				req.Header.Set("Accept-Encoding", "identity")
				resp, err := cl.Do(req)
				if err != nil {
					t.Fatalf("%s %s %s: %v", proto, c.method, c.path, err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil || string(b) != c.body {
					t.Errorf("%s %s %s: body %q (%v), want %q", proto, c.method, c.path, b, err, c.body)
				}
				got := none
				if v, ok := resp.Header["Content-Type"]; ok {
					got = strings.Join(v, ", ")
				}
				if resp.StatusCode != c.status || got != c.ctype {
					t.Errorf("%s %s %s: %d with Content-Type %q, want %d with %q", proto, c.method, c.path, resp.StatusCode, got, c.status, c.ctype)
				}
			}

			// The head of /quiet reaches the client before its body exists.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req, _ := http.NewRequestWithContext(ctx, "GET", base+"/quiet?p="+proto, nil)
			req.Header.Set("Accept-Encoding", "identity")
			resp, err := cl.Do(req)
			close(quiet[proto])
			if err != nil {
				cancel()
				t.Fatalf("%s /quiet: no head while the origin is quiet: %v", proto, err)
			}
			if v, ok := resp.Header["Content-Type"]; ok {
				t.Errorf("%s /quiet: Content-Type %q, want none", proto, v)
			}
			resp.Body.Close()
			cancel()
		}
	})
}
