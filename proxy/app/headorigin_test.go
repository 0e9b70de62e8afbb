package app

import (
	"bufio"
	"bytes"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// headOrigin is an HTTP/1.1 origin that answers every request with the
// request head exactly as it arrived (request line and field lines, CRLF
// ends kept) as its body, so a test sees what pollproxy wrote, framing
// fields included. extra are field lines added to each response.
func headOrigin(t *testing.T, extra ...string) string {
	t.Helper()
	return servertest.ServeConns(t, func(c net.Conn) {
		br := bufio.NewReader(c)
		for {
			var head strings.Builder
			length, chunked := int64(0), false
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					return
				}
				head.WriteString(line)
				if line == "\r\n" {
					break
				}
				name, value, _ := strings.Cut(strings.TrimRight(line, "\r\n"), ":")
				switch strings.ToLower(name) {
				case "content-length":
					length, _ = strconv.ParseInt(strings.TrimSpace(value), 10, 64)
				case "transfer-encoding":
					chunked = strings.Contains(strings.ToLower(value), "chunked")
				}
			}
			if chunked {
				io.Copy(io.Discard, httputil.NewChunkedReader(br))
				// The trailer section: lines up to an empty one.
				for {
					line, err := br.ReadString('\n')
					if err != nil || line == "\r\n" {
						break
					}
				}
			} else if _, err := io.CopyN(io.Discard, br, length); err != nil {
				return
			}
			body := head.String()
			fields := ""
			for _, e := range extra {
				fields += e + "\r\n"
			}
			if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\n%sContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", fields, len(body), body); err != nil {
				return
			}
		}
	})
}

// headLines splits what headOrigin answered into the request line and
// the field lines, names in lower case.
func headLines(body string) (requestLine string, fields []string) {
	lines := strings.Split(strings.TrimSuffix(body, "\r\n\r\n"), "\r\n")
	for _, l := range lines[1:] {
		name, value, _ := strings.Cut(l, ":")
		fields = append(fields, strings.ToLower(name)+":"+value)
	}
	return lines[0], fields
}

// hasField reports whether fields (from headLines) hold a field name.
func hasField(fields []string, name string) (value string, ok bool) {
	for _, f := range fields {
		if n, v, _ := strings.Cut(f, ":"); n == name {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// rawH1 sends request, written by hand, over TLS (HTTP/1.1) to port and
// returns the response's status and body.
func rawH1(t *testing.T, port int, request string) (int, string) {
	t.Helper()
	conn, err := stdtls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &stdtls.Config{ServerName: "localhost", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rawH2 sends one request over HTTP/2 with exactly the fields given
// (pseudo-fields first, as pairs) and body as DATA when not nil, and
// returns the response's status and body.
func rawH2(t *testing.T, port int, body []byte, pairs ...string) (string, string) {
	t.Helper()
	conn, err := stdtls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &stdtls.Config{ServerName: "localhost", InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, http2.ClientPreface)
	fr := http2.NewFramer(conn, conn)
	fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	fr.WriteSettings()
	var hbuf bytes.Buffer
	enc := hpack.NewEncoder(&hbuf)
	for i := 0; i+1 < len(pairs); i += 2 {
		enc.WriteField(hpack.HeaderField{Name: pairs[i], Value: pairs[i+1]})
	}
	fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: hbuf.Bytes(), EndHeaders: true, EndStream: body == nil})
	if body != nil {
		fr.WriteData(1, true, body)
	}
	status, got := "", []byte(nil)
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading the answer: %v", err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.MetaHeadersFrame:
			if f.StreamID == 1 {
				status = f.PseudoValue("status")
				if f.StreamEnded() {
					return status, ""
				}
			}
		case *http2.DataFrame:
			if f.StreamID == 1 {
				got = append(got, f.Data()...)
				if f.StreamEnded() {
					return status, string(got)
				}
			}
		case *http2.RSTStreamFrame:
			t.Fatalf("stream reset: %v", f.ErrCode)
		case *http2.GoAwayFrame:
			t.Fatalf("goaway: %v", f.ErrCode)
		}
	}
}
