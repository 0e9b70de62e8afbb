package app

import (
	"bytes"
	"context"
	stdtls "crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	pptls "github.com/pollproxy/pollproxy/tls"
	"github.com/pollproxy/pollproxy/tls/acmetest"
	tlscerts "github.com/pollproxy/pollproxy/tls/certs"
	"github.com/pollproxy/pollproxy/tls/redisstore/redistest"
)

// askServer is an on_demand_tls ask endpoint on loopback: it approves
// the names in allow (200) and refuses the others (403), counts the
// questions, and holds the answer for a name in hold until release is
// closed.
type askServer struct {
	url     string
	allow   map[string]bool
	hold    string
	asked   chan string // the held name, when its question arrives
	release chan struct{}

	mu    sync.Mutex
	count map[string]int
}

func startAsk(t *testing.T, hold string, allow ...string) *askServer {
	t.Helper()
	a := &askServer{allow: map[string]bool{}, hold: hold, asked: make(chan string, 1),
		release: make(chan struct{}), count: map[string]int{}}
	for _, n := range allow {
		a.allow[n] = true
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("domain")
		a.mu.Lock()
		a.count[name]++
		a.mu.Unlock()
		if name == a.hold {
			select {
			case a.asked <- name:
			default:
			}
			<-a.release
		}
		if !a.allow[name] {
			w.WriteHeader(http.StatusForbidden)
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() {
		select {
		case <-a.release:
		default:
			close(a.release)
		}
		srv.Close()
	})
	a.url = "http://" + ln.Addr().String() + "/check"
	return a
}

func (a *askServer) asks(name string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.count[name]
}

// onDemandFile is a Caddyfile with a known site and a site for any name
// with on-demand certificates from issuer.
func onDemandFile(t *testing.T, poller, storage, ask string, port int, issuer string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "Caddyfile")
	os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	%s
	on_demand_tls {
		ask %s
	}
}

known.localhost:%[4]d {
	tls internal
	respond "known"
}

:%[4]d {
	tls %[5]s
	respond "any {host}"
}
`, poller, storage, ask, port, issuer)), 0o644)
	return file
}

// TestOnDemandInternal: with on_demand and the local CA, a handshake for
// a name the ask endpoint approves gets its certificate during the
// handshake; while the endpoint holds its answer the loop (one) serves
// other handshakes and requests; a refused name fails its handshake and
// gets no certificate; many handshakes at once for one new name issue
// it once, and a flood of refused names leaves the rest served.
func TestOnDemandInternal(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		ask := startAsk(t, "slow.test", "slow.test", "fast.test", "same.test")
		dir := t.TempDir()
		storage := filepath.Join(dir, "storage")
		port := servertest.FreePort(t)
		r := start(t, onDemandFile(t, backend, "storage "+storage, ask.url, port, "internal {\n\t\ton_demand\n\t}"), Options{})
		roots := localRoots(t, storage)
		addr := fmt.Sprintf("127.0.0.1:%d", port)

		type result struct {
			st   stdtls.ConnectionState
			body string
			err  error
		}
		slow := make(chan result, 1)
		go func() {
			st, body, err := tlsGet(addr, h1TLS("slow.test", roots))
			slow <- result{st, body, err}
		}()
		select {
		case <-ask.asked:
		case res := <-slow:
			t.Fatalf("slow.test answered before its permission: %q %v", res.body, res.err)
		case <-time.After(10 * time.Second):
			t.Fatal("the ask endpoint was not asked about slow.test")
		}
		// The permission for slow.test is pending on a handshake worker:
		// the loop serves everything else meanwhile.
		if _, body, err := tlsGet(addr, h1TLS("known.localhost", roots)); err != nil || body != "known" {
			t.Fatalf("known.localhost while slow.test waits: %q %v", body, err)
		}
		if _, body, err := tlsGet(addr, h1TLS("fast.test", roots)); err != nil || body != "any fast.test" {
			t.Fatalf("fast.test while slow.test waits: %q %v", body, err)
		}
		if _, body, err := tlsGet(addr, h1TLS("denied.test", roots)); err == nil {
			t.Fatalf("denied.test: answered %q, want a failed handshake", body)
		}
		if ask.asks("denied.test") != 1 {
			t.Fatalf("denied.test asked %d times", ask.asks("denied.test"))
		}
		select {
		case res := <-slow:
			t.Fatalf("slow.test answered before its permission: %q %v", res.body, res.err)
		default:
		}
		close(ask.release)
		res := <-slow
		if res.err != nil || res.body != "any slow.test" {
			t.Fatalf("slow.test: %q %v", res.body, res.err)
		}
		if got := res.st.PeerCertificates[0].DNSNames; len(got) != 1 || got[0] != "slow.test" {
			t.Fatalf("slow.test: certificate for %v", got)
		}

		// Many handshakes for one new name: one certificate, issued once.
		const n = 24
		var wg sync.WaitGroup
		leaves := make([][]byte, n)
		errs := make([]error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, body, err := tlsGet(addr, h1TLS("same.test", roots))
				if err == nil && body != "any same.test" {
					err = fmt.Errorf("body %q", body)
				}
				if err == nil {
					leaves[i] = st.PeerCertificates[0].Raw
				}
				errs[i] = err
			}()
		}
		// A flood of names the endpoint refuses, at the same time.
		const flood = 64
		refusedOK := make([]bool, flood)
		for i := range flood {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, body, err := tlsGet(addr, h1TLS(fmt.Sprintf("flood%d.test", i), roots))
				refusedOK[i] = err != nil || body == ""
			}()
		}
		wg.Wait()
		for i := range n {
			if errs[i] != nil {
				t.Fatalf("same.test handshake %d: %v", i, errs[i])
			}
			if !bytes.Equal(leaves[i], leaves[0]) {
				t.Fatalf("same.test handshake %d got another certificate", i)
			}
		}
		for i, ok := range refusedOK {
			if !ok {
				t.Fatalf("flood%d.test was answered", i)
			}
		}
		if c := strings.Count(r.log.String(), `msg="certificate obtained successfully" identifier=same.test`); c != 1 {
			t.Fatalf("same.test issued %d times, want 1", c)
		}
		if strings.Contains(r.log.String(), "identifier=flood") {
			t.Fatal("a refused name got a certificate")
		}
		if _, body, err := tlsGet(addr, h1TLS("known.localhost", roots)); err != nil || body != "known" {
			t.Fatalf("known.localhost after the flood: %q %v", body, err)
		}
	})
}

// TestOnDemandWithoutPermission: a site for any name with on-demand
// certificates from a public CA needs on_demand_tls, as in Caddy; from
// the local CA it does not.
func TestOnDemandWithoutPermission(t *testing.T) {
	dir := t.TempDir()
	port := servertest.FreePort(t)
	file := filepath.Join(dir, "Caddyfile")
	body := fmt.Sprintf("{\n\tadmin off\n\thttp_port off\n\tstorage %s\n}\n:%d {\n\ttls %%s\n\trespond ok\n}\n", filepath.Join(dir, "s"), port)
	os.WriteFile(file, []byte(fmt.Sprintf(body, "{\n\t\ton_demand\n\t\tissuer acme\n\t}")), 0o644)
	cfg, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Start(cfg, Options{}); err == nil || !strings.Contains(err.Error(), "on-demand TLS cannot be enabled without a permission module") {
		t.Fatalf("acme on demand without ask: %v", err)
	}
	os.WriteFile(file, []byte(fmt.Sprintf(body, "internal {\n\t\ton_demand\n\t}")), 0o644)
	cfg, err = Load(file)
	if err != nil {
		t.Fatal(err)
	}
	in, err := Start(cfg, Options{})
	if err != nil {
		t.Fatalf("internal on demand without ask: %v", err)
	}
	in.Close()
}

// TestOnDemandACMESharedRedis: on-demand certificates from an ACME CA
// (Pebble, validating over TLS-ALPN-01 through a balancer in front of
// both instances) for two instances sharing one Redis: the first
// handshake for an approved name, on either instance, obtains it with
// one order, and the other instance serves the same certificate from
// storage; a refused name orders nothing.
func TestOnDemandACMESharedRedis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-server and an ACME test CA")
	}
	haveBackends(t, "epoll", "poll")
	srv := redistest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	p := acmetest.Start(t, ctx)
	ask := startAsk(t, "", "localhost")

	pa, pb := servertest.FreePort(t), servertest.FreePort(t)
	startBalancer(t, p.TLSPort, fmt.Sprintf("127.0.0.1:%d", pa), fmt.Sprintf("127.0.0.1:%d", pb))
	edit := func(c *tlscerts.Config) {
		c.CARoots = p.TLSRoots
		c.TLSALPNPort = p.TLSPort
	}
	storage := fmt.Sprintf("storage redis {\n\t\taddress %s\n\t\tkey_prefix ondemand\n\t}", srv.Addr)
	issuer := fmt.Sprintf("{\n\t\ton_demand\n\t\tissuer acme {\n\t\t\tdir %s\n\t\t\temail dev@pollproxy.test\n\t\t}\n\t}", p.DirURL)
	start(t, onDemandFile(t, "epoll", storage, ask.url, pa, issuer), Options{EditCerts: edit})
	start(t, onDemandFile(t, "poll", storage, ask.url, pb, issuer), Options{EditCerts: edit})
	roots := p.IssuingRoot(t)
	cfg := h1TLS("localhost", roots)

	// The handshake waits for the order (a few seconds against Pebble).
	stA, body, err := tlsGet(fmt.Sprintf("127.0.0.1:%d", pa), cfg)
	if err != nil || body != "any localhost" {
		t.Fatalf("instance A, localhost: %q %v\n%s", body, err, p.Logs)
	}
	stB, body, err := tlsGet(fmt.Sprintf("127.0.0.1:%d", pb), cfg)
	if err != nil || body != "any localhost" {
		t.Fatalf("instance B, localhost: %q %v", body, err)
	}
	if !bytes.Equal(stA.PeerCertificates[0].Raw, stB.PeerCertificates[0].Raw) {
		t.Fatal("the instances serve different certificates for localhost")
	}
	if n := p.Orders(); n != 1 {
		t.Fatalf("pebble received %d orders for one name shared by two instances, want 1", n)
	}
	refused := &stdtls.Config{ServerName: "refused.localhost", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}
	if _, body, err := tlsGet(fmt.Sprintf("127.0.0.1:%d", pb), refused); err == nil {
		t.Fatalf("refused.localhost: answered %q", body)
	}
	if n := p.Orders(); n != 1 {
		t.Fatalf("pebble received %d orders after a refused name, want still 1", n)
	}
}

// TestGetCertificateHTTP: get_certificate http asks its endpoint for a
// handshake's certificate (with the SNI in server_name) on the
// handshake's worker and serves the PEM bundle it answers; a 204 leaves
// nothing to serve and, with no permission to issue, the handshake fails.
func TestGetCertificateHTTP(t *testing.T) {
	polltest.ForEachBackend(t, servertest.ShortBackends(netpoll.Available()), func(t *testing.T, backend string) {
		cert, err := pptls.SelfSigned([]string{"ok.test"})
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := pptls.EncodePEM(cert)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var asked []string
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name := r.URL.Query().Get("server_name")
			mu.Lock()
			asked = append(asked, name)
			mu.Unlock()
			if name != "ok.test" {
				w.WriteHeader(http.StatusNoContent)
				return
			}
			w.Write(append(append([]byte(nil), certPEM...), keyPEM...))
		})}
		go srv.Serve(ln)
		defer srv.Close()

		port := servertest.FreePort(t)
		file := filepath.Join(t.TempDir(), "Caddyfile")
		os.WriteFile(file, []byte(fmt.Sprintf(`{
	poller %s
	loops 1
	admin off
	http_port off
	default_bind 127.0.0.1
	storage %s
}

:%d {
	tls {
		get_certificate http http://%s/certs
	}
	respond "got {host}"
}
`, backend, filepath.Join(t.TempDir(), "storage"), port, ln.Addr())), 0o644)
		start(t, file, Options{})
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		roots := x509.NewCertPool()
		roots.AddCert(cert.Leaf)
		st, body, err := tlsGet(addr, h1TLS("ok.test", roots))
		if err != nil || body != "got ok.test" {
			t.Fatalf("ok.test: %q %v", body, err)
		}
		if !bytes.Equal(st.PeerCertificates[0].Raw, cert.Leaf.Raw) {
			t.Fatal("ok.test: not the endpoint's certificate")
		}
		if _, body, err := tlsGet(addr, &stdtls.Config{ServerName: "none.test", InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}}); err == nil {
			t.Fatalf("none.test: answered %q", body)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(asked) < 2 || asked[0] != "ok.test" || asked[len(asked)-1] != "none.test" {
			t.Fatalf("the endpoint was asked for %q", asked)
		}
	})
}
