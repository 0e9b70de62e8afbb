package main

import (
	"bufio"
	stdtls "crypto/tls"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestReverseProxyIdleTimeout: --idle-timeout reaches both front ends. An
// idle h2 connection gets GOAWAY(NO_ERROR) and is closed, an idle
// HTTP/1.1 one is closed, long before the defaults (2 min, 60 s).
func TestReverseProxyIdleTimeout(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port := servertest.FreePort(t)
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		startProc(t, "pollproxy: https://", []string{"POLLPROXY_DATA=" + t.TempDir()},
			"reverse-proxy", "--from", addr, "--to", servertest.Origin(t, servertest.Says("A")), "--loops", "1", "--poller", backend,
			"--idle-timeout", "300ms")
		tlsCfg := func(proto string) *stdtls.Config {
			// The certificate is not what this test checks.
			return &stdtls.Config{InsecureSkipVerify: true, NextProtos: []string{proto}}
		}

		c, err := stdtls.Dial("tcp", addr, tlsCfg("h2"))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write([]byte(http2.ClientPreface))
		fr := http2.NewFramer(c, c)
		fr.WriteSettings()
		var goAway *http2.GoAwayFrame
		for {
			f, err := fr.ReadFrame()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("h2: %v (GOAWAY %v)", err, goAway)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					fr.WriteSettingsAck()
				}
			case *http2.GoAwayFrame:
				goAway = f
			}
		}
		if goAway == nil || goAway.ErrCode != http2.ErrCodeNo {
			t.Fatalf("h2 closed with GOAWAY %v, want NO_ERROR", goAway)
		}

		c1, err := stdtls.Dial("tcp", addr, tlsCfg("http/1.1"))
		if err != nil {
			t.Fatal(err)
		}
		defer c1.Close()
		c1.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(c1, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n")
		br := bufio.NewReader(c1)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		io.ReadAll(res.Body)
		if _, err := br.ReadByte(); err != io.EOF {
			t.Fatalf("HTTP/1.1 idle connection: %v, want EOF", err)
		}
	})
}
