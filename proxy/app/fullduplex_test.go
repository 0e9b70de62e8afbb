package app

import (
	"bufio"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestFullDuplexH1: what Caddy's enable_full_duplex turns on, pollproxy's
// HTTP/1.1 front end always does: the origin's answer to each line of an
// upload reaches the client while the upload goes on (the client sends
// the next line only after reading the answer to the last).
func TestFullDuplexH1(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		origin := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.NewResponseController(w).EnableFullDuplex()
			w.WriteHeader(200)
			in := bufio.NewScanner(r.Body)
			for in.Scan() {
				fmt.Fprintf(w, "got %s\n", in.Text())
				w.(http.Flusher).Flush()
			}
		}))
		dir := t.TempDir()
		certFile, keyFile, roots := filePair(t, dir)
		port := servertest.FreePort(t)
		file := filepath.Join(dir, "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf("{\n\tpoller %s\n\tloops 1\n\tadmin off\n\tstorage %s\n\tdefault_bind 127.0.0.1\n\tservers {\n\t\tenable_full_duplex\n\t}\n}\nlocalhost:%d {\n\ttls %s %s\n\treverse_proxy %s {\n\t\tflush_interval -1\n\t}\n}\n",
			backend, filepath.Join(dir, "storage"), port, certFile, keyFile, origin)), 0o644)
		start(t, file, Options{})
		c, err := stdtls.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port), &stdtls.Config{RootCAs: roots, ServerName: "localhost", NextProtos: []string{"http/1.1"}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "POST /up HTTP/1.1\r\nHost: localhost:%d\r\nTransfer-Encoding: chunked\r\n\r\n", port)
		br := bufio.NewReader(c)
		chunk := func(s string) { fmt.Fprintf(c, "%x\r\n%s\r\n", len(s), s) }
		chunk("line 1\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("no answer while the upload goes on: %v", err)
		}
		body := bufio.NewReader(resp.Body)
		for i := 1; i <= 3; i++ {
			line, err := body.ReadString('\n')
			if err != nil || line != fmt.Sprintf("got line %d\n", i) {
				t.Fatalf("answer %d: %q %v", i, line, err)
			}
			if i < 3 {
				chunk(fmt.Sprintf("line %d\n", i+1))
			}
		}
		fmt.Fprint(c, "0\r\n\r\n")
		if rest, err := io.ReadAll(body); err != nil || len(rest) != 0 {
			t.Errorf("after the upload: %q %v", rest, err)
		}
	})
}
