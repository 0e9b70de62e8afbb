package redisstore_test

import (
	"bytes"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
	"github.com/pollproxy/pollproxy/tls/redisstore"
	"github.com/pollproxy/pollproxy/tls/redisstore/redistest"
)

// TestCertsWaitForRedis adds a local CA name to a certs.Manager whose Redis is
// down: the add succeeds, handshakes for the name fail (no CA is made up
// meanwhile), and once Redis returns the name is served within seconds
// with a certificate under the root that was already in Redis, not a new
// one. Added again in a later outage, it keeps being served from memory.
func TestCertsWaitForRedis(t *testing.T) {
	srv := redistest.Start(t)

	// The cluster's CA, created while Redis is up.
	first, err := tlscerts.New(tlscerts.Config{Storage: newStorage(t, srv.Addr, nil)})
	if err != nil {
		t.Fatal(err)
	}
	rootPEM, err := first.RootPEM()
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(rootPEM)

	srv.Stop()
	var logs servertest.SyncBuffer
	st := newStorage(t, srv.Addr, func(o *redisstore.Options) {
		o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	certs, err := tlscerts.New(tlscerts.Config{Storage: st, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer certs.Close()
	if err := certs.AddInternal("wait.localhost"); err != nil {
		t.Fatalf("AddInternal with Redis down: %v, want nil (the name waits)", err)
	}
	if _, ok := logs.Await("these names get their certificates when it answers", 5*time.Second, nil); !ok {
		t.Fatalf("no log line for the waiting name:\n%s", logs.String())
	}
	if _, ok := logs.Await("certificate storage unreachable: certificates cannot be loaded", 5*time.Second, nil); !ok {
		t.Fatalf("no outage log line:\n%s", logs.String())
	}
	ln, err := stdtls.Listen("tcp", "127.0.0.1:0", certs.TLSConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				c.SetDeadline(time.Now().Add(5 * time.Second))
				c.(*stdtls.Conn).Handshake()
				c.Close()
			}()
		}
	}()
	dial := func() (*x509.Certificate, error) {
		c, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", ln.Addr().String(),
			&stdtls.Config{ServerName: "wait.localhost", RootCAs: roots})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		ch := c.ConnectionState().VerifiedChains[0]
		return ch[len(ch)-1], nil
	}
	if _, err := dial(); err == nil {
		t.Fatal("a handshake for a waiting name succeeded while Redis is down")
	}

	srv.Restart()
	var root *x509.Certificate
	if !servertest.Within(15*time.Second, func() bool { root, err = dial(); return err == nil }) {
		t.Fatalf("wait.localhost not served 15 s after Redis returned: %v\n%s", err, logs.String())
	}
	if !bytes.Equal(root.Raw, mustParse(t, rootPEM).Raw) {
		t.Fatal("the certificate chains to another root than the one in Redis")
	}
	if !strings.Contains(logs.String(), "certificates loaded, issued or ordered for the names that waited") {
		t.Fatalf("no recovery log line for the waiting names:\n%s", logs.String())
	}

	// Added again (a reload) while Redis is away: the certificate in
	// memory keeps being served, and the name does not wait.
	srv.Stop()
	if st.Ping(context.Background()) == nil || !st.Down() {
		t.Fatal("the storage does not know Redis is down")
	}
	if err := certs.AddInternal("wait.localhost"); err != nil {
		t.Fatalf("AddInternal again with Redis down: %v", err)
	}
	if n := strings.Count(logs.String(), "these names get their certificates when it answers"); n != 1 {
		t.Fatalf("a name served from memory was put aside again (%d log lines):\n%s", n, logs.String())
	}
	if _, err := dial(); err != nil {
		t.Fatalf("wait.localhost after a second outage: %v", err)
	}
}

func mustParse(t *testing.T, p []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("no PEM block")
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
