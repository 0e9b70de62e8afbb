package app

import (
	"bytes"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/tls/acmetest"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
	"github.com/pollproxy/pollproxy/tls/redisstore"
	"github.com/pollproxy/pollproxy/tls/redisstore/redistest"
)

// balancer is a TCP load balancer on loopback: each connection goes to
// the next backend in turn, as DNS round robin or an L4 balancer would
// spread Pebble's validation connections over the instances.
type balancer struct {
	backends []string
	next     atomic.Uint64
}

func startBalancer(t *testing.T, port int, backends ...string) *balancer {
	t.Helper()
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	b := &balancer{backends: backends}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			first := b.next.Add(1)
			go func() {
				defer c.Close()
				// A backend not listening yet is skipped, as a balancer's
				// health check would; with none up yet (an instance
				// starts its first order before it opens its listeners)
				// the connection waits a little, as in a listen queue.
				var u net.Conn
				var err error
				for try := 0; try < 50 && u == nil; try++ {
					if try > 0 {
						// Real time: a stand-in balancer waiting for a
						// backend process to listen.
						time.Sleep(100 * time.Millisecond)
					}
					for i := range uint64(len(b.backends)) {
						if u, err = net.Dial("tcp", b.backends[(first+i)%uint64(len(b.backends))]); err == nil {
							break
						}
					}
				}
				if err != nil {
					return
				}
				defer u.Close()
				go func() { io.Copy(u, c); u.(*net.TCPConn).CloseWrite() }()
				io.Copy(c, u)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return b
}

// clusterFile writes one instance's Caddyfile: Redis storage, ACME from
// Pebble over TLS-ALPN-01 for localhost, and a local CA site.
func clusterFile(t *testing.T, poller, redisAddr, acmeDir string, port, admin int, origin string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin 127.0.0.1:%d
	default_bind 127.0.0.1
	http_port off
	acme_ca %s
	storage redis {
		address %s
		key_prefix cluster
	}
}

localhost:%[5]d {
	reverse_proxy %[6]s
	tls dev@pollproxy.test
}

internal.localhost:%[5]d {
	reverse_proxy %[6]s
	tls internal
}
`, poller, admin, acmeDir, redisAddr, port, origin)), 0o644)
	return file
}

// leafOf handshakes with addr for name, verifying against roots, and
// returns the leaf and the root of the verified chain.
func leafOf(addr, name string, roots *x509.CertPool) (leaf, root *x509.Certificate, err error) {
	c, err := stdtls.DialWithDialer(&net.Dialer{Timeout: 3 * time.Second}, "tcp", addr,
		&stdtls.Config{ServerName: name, RootCAs: roots, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	st := c.ConnectionState()
	chain := st.VerifiedChains[0]
	return chain[0], chain[len(chain)-1], nil
}

// awaitLeaf retries leafOf until it succeeds or d passes (ACME names are
// obtained in the background).
func awaitLeaf(t *testing.T, addr, name string, roots *x509.CertPool, d time.Duration) (leaf, root *x509.Certificate) {
	t.Helper()
	// ACME orders run off the loops, against Pebble's own timers.
	var err error
	if !servertest.Within(d, func() bool { leaf, root, err = leafOf(addr, name, roots); return err == nil }) {
		t.Fatalf("%s at %s: no verified certificate after %v: %v", name, addr, d, err)
	}
	return leaf, root
}

// TestClusterSharedRedis runs two instances (epoll and poll) over one
// Redis and one Pebble, with Pebble's validations spread over both by a
// balancer: one ACME order for the name, the same certificate on both,
// the same local CA root on both; a Redis restart loses nothing, and a
// third instance started afterwards serves the stored certificate without
// a new order.
func TestClusterSharedRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and an ACME test CA")
	}
	haveBackends(t, "epoll", "poll")
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := acmetest.Start(t, ctx)
	o := startOrigin(t, "O")

	pa, pb := servertest.FreePort(t), servertest.FreePort(t)
	startBalancer(t, p.TLSPort, fmt.Sprintf("127.0.0.1:%d", pa), fmt.Sprintf("127.0.0.1:%d", pb))
	edit := func(c *tlscerts.Config) {
		c.CARoots = p.TLSRoots
		// Pebble validates on its TLS port, where the balancer listens;
		// certmagic sees it taken and leaves the answer to the instances.
		c.TLSALPNPort = p.TLSPort
	}
	adminA, adminB := servertest.FreePort(t), servertest.FreePort(t)
	a := start(t, clusterFile(t, "epoll", srv.Addr, p.DirURL, pa, adminA, o.addr), Options{EditCerts: edit})
	b := start(t, clusterFile(t, "poll", srv.Addr, p.DirURL, pb, adminB, o.addr), Options{EditCerts: edit})

	acmeRoots := p.IssuingRoot(t)
	addrA, addrB := fmt.Sprintf("127.0.0.1:%d", pa), fmt.Sprintf("127.0.0.1:%d", pb)
	leafA, _ := awaitLeaf(t, addrA, "localhost", acmeRoots, 60*time.Second)
	leafB, _ := awaitLeaf(t, addrB, "localhost", acmeRoots, 60*time.Second)
	if !bytes.Equal(leafA.Raw, leafB.Raw) {
		t.Fatalf("the instances serve different certificates for localhost: serials %v and %v", leafA.SerialNumber, leafB.SerialNumber)
	}
	if n := p.Orders(); n != 1 {
		t.Fatalf("pebble received %d orders for one name shared by two instances, want 1\n%s", n, p.Logs)
	}

	// The local CA: one root in Redis, both instances' leaves under it.
	st, err := redisstore.New(redisstore.Options{Addrs: []string{srv.Addr}, KeyPrefix: "cluster"})
	if err != nil {
		t.Fatal(err)
	}
	certs, err := tlscerts.New(tlscerts.Config{Storage: st})
	if err != nil {
		t.Fatal(err)
	}
	defer certs.Close()
	rootPEM, err := certs.RootPEM()
	if err != nil {
		t.Fatal(err)
	}
	localRoots := x509.NewCertPool()
	localRoots.AppendCertsFromPEM(rootPEM)
	_, rootA := awaitLeaf(t, addrA, "internal.localhost", localRoots, 10*time.Second)
	_, rootB := awaitLeaf(t, addrB, "internal.localhost", localRoots, 10*time.Second)
	if !bytes.Equal(rootA.Raw, rootB.Raw) {
		t.Fatal("the instances' local CA certificates chain to different roots")
	}
	// Requests go through both.
	for _, addr := range []string{addrA, addrB} {
		c := servertest.H2Client(addr, acmeRoots)
		if status, body, _ := servertest.GetH2(t, c, fmt.Sprintf("https://localhost:%s/", strings.Split(addr, ":")[1])); status != 200 || !strings.HasPrefix(body, "O") {
			t.Fatalf("%s: %d %q", addr, status, body)
		}
		c.CloseIdleConnections()
	}
	if m := scrape(t, fmt.Sprintf("127.0.0.1:%d", adminA)); !strings.Contains(m, "pollproxy_storage_up 1") {
		t.Fatalf("instance A's metrics lack pollproxy_storage_up 1:\n%s", m)
	}

	// Redis restarts: nothing is lost, and a third instance started now
	// serves the same certificate from storage without ordering again.
	srv.Restart()
	var keys []string
	servertest.Within(5*time.Second, func() bool { // the Redis server restarting, another process
		keys, err = st.List(ctx, "certificates", true)
		return err == nil
	})
	if err != nil || len(keys) == 0 {
		t.Fatalf("certificates after a Redis restart: %q %v", keys, err)
	}
	pc := servertest.FreePort(t)
	start(t, clusterFile(t, "epoll", srv.Addr, p.DirURL, pc, servertest.FreePort(t), o.addr), Options{EditCerts: edit})
	leafC, _ := awaitLeaf(t, fmt.Sprintf("127.0.0.1:%d", pc), "localhost", acmeRoots, 20*time.Second)
	if !bytes.Equal(leafC.Raw, leafA.Raw) {
		t.Fatal("an instance started after the Redis restart serves another certificate")
	}
	if n := p.Orders(); n != 1 {
		t.Fatalf("pebble received %d orders after the restart, want still 1", n)
	}
	_, _ = a, b
}
