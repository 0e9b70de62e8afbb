package oracle

import (
	stdtls "crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/internal/testca"
	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/app"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestOraclePKIPools: the pki_root and pki_intermediate trust pools are
// refused by pollproxy exactly where Caddy's start refuses them (caddy
// validate provisions every module, the trust pools among them): no pki
// app, a CA that pki does not configure, no authority.
func TestOraclePKIPools(t *testing.T) {
	bin := buildCaddy(t)
	clientAuth := func(site, pool string) string {
		return site + " {\n\ttls {\n\t\tclient_auth {\n\t\t\ttrust_pool " + pool + "\n\t\t}\n\t}\n\trespond ok\n}\n"
	}
	upstream := func(site, pool string) string {
		return site + " {\n\treverse_proxy https://127.0.0.1:9 {\n\t\ttransport http {\n\t\t\ttls_trust_pool " + pool + "\n\t\t}\n\t}\n}\n"
	}
	const pki = "{\n\tpki {\n\t\tca corp {\n\t\t\tname Corp\n\t\t}\n\t}\n}\n"
	for _, c := range []struct{ name, caddyfile string }{
		{"client_auth, localhost", clientAuth("localhost:9443", "pki_root local")},
		{"client_auth, public name", clientAuth("example.com", "pki_root local")},
		{"client_auth, tls internal", "example.com {\n\ttls internal {\n\t\tclient_auth {\n\t\t\ttrust_pool pki_intermediate local\n\t\t}\n\t}\n}\n"},
		{"client_auth, second trust_pool replaces", "example.com {\n\ttls internal {\n\t\tclient_auth {\n\t\t\ttrust_pool file /nonexistent.pem\n\t\t\ttrust_pool pki_root local\n\t\t}\n\t}\n}\n"},
		{"client_auth, pki ca", pki + clientAuth("example.com", "pki_root corp")},
		{"client_auth, pki ca and local", pki + clientAuth("example.com", "pki_intermediate corp {\n\t\t\t\tauthority local\n\t\t\t}")},
		{"client_auth, unconfigured ca", clientAuth("localhost:9443", "pki_root other")},
		{"client_auth, unconfigured ca beside pki", pki + clientAuth("example.com", "pki_root corp other")},
		{"client_auth, no authority", clientAuth("localhost:9443", "pki_root")},
		{"client_auth, unknown subdirective", clientAuth("localhost:9443", "pki_root local {\n\t\t\t\tca local\n\t\t\t}")},
		{"upstream, localhost", upstream("localhost:9443", "pki_root local")},
		{"upstream, public name", upstream("example.com", "pki_intermediate local")},
		{"upstream, http localhost", upstream("http://localhost:9080", "pki_root local")},
		{"upstream, skip_install_trust", "{\n\tskip_install_trust\n}\n" + upstream("example.com", "pki_root local")},
		{"upstream, local_certs", "{\n\tlocal_certs\n}\n" + upstream("example.com", "pki_root local")},
		{"upstream, auto_https off", "{\n\tauto_https off\n}\n" + upstream("localhost:9443", "pki_root local")},
		{"upstream, auto_https disable_certs", "{\n\tauto_https disable_certs\n}\n" + upstream("localhost:9443", "pki_root local")},
		{"upstream, pki ca", pki + upstream("example.com", "pki_root corp")},
		{"upstream, unconfigured ca", pki + upstream("example.com", "pki_intermediate other")},
		{"upstream, no authority", upstream("localhost:9443", "pki_intermediate")},
		{"upstream, twice", upstream("localhost:9443", "pki_root local\n\t\t\ttls_trust_pool pki_intermediate local")},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir, file := caddyfileIn(t, c.caddyfile)
			cmd := exec.Command(bin, "validate", "--config", file, "--adapter", "caddyfile")
			cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_CONFIG_HOME="+filepath.Join(dir, "config"), "XDG_DATA_HOME="+filepath.Join(dir, "data"))
			out, caddyErr := cmd.CombinedOutput()
			_, ppErr := app.Load(file)
			if (caddyErr == nil) != (ppErr == nil) {
				t.Errorf("Caddy: %v\n%s\npollproxy: %v\nCaddyfile:\n%s", caddyErr, lastLine(out), ppErr, c.caddyfile)
			}
		})
	}
}

// lastLine is the last line of a program's output, where its error is.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}

// pkiHandshakeFile is the Caddyfile of TestOraclePKIHandshakes: sites
// whose client_auth trusts the local CA's root or its intermediate.
const pkiHandshakeFile = `{
	admin off
	http_port HTTPPORT
	auto_https disable_redirects
	skip_install_trust
	storage file_system STORAGEDIR
}

root.localhost:PORT {
	tls internal {
		client_auth {
			trust_pool pki_root local
		}
	}
	respond "root"
}

inter.localhost:PORT {
	tls internal {
		client_auth {
			trust_pool pki_intermediate {
				authority local
			}
		}
	}
	respond "inter"
}

plain.localhost:PORT {
	tls internal
	respond "plain"
}
`

// TestOraclePKIHandshakes: client certificates issued by each server's
// own local CA (read from its storage: Caddy's pki/authorities/local,
// pollproxy's pollproxy/ca/local), by its root or its intermediate, with
// and without the chain, and a stranger's, are accepted or refused by
// pollproxy as by Caddy.
func TestOraclePKIHandshakes(t *testing.T) {
	bin := buildCaddy(t)
	stranger := testca.New(t, "stranger").Client(t, "stranger")
	caddyfile := func(port, httpPort int, storage string) string {
		return strings.NewReplacer("HTTPPORT", fmt.Sprint(httpPort), "PORT", fmt.Sprint(port), "STORAGEDIR", storage).Replace(pkiHandshakeFile)
	}
	ready := func(addr string, exited <-chan error) {
		t.Helper()
		untilAnswers(t, exited, "handshake", func() bool {
			return !strings.HasPrefix(tlsOutcome(addr, tlsProbe{"ready", "plain.localhost", nil}), "refused")
		})
	}
	// outcomes makes the client certificates from the CA in caDir and
	// tries each.
	outcomes := func(t *testing.T, addr, caDir string) map[string]string {
		root := testca.Load(t, filepath.Join(caDir, "root"))
		inter := testca.Load(t, filepath.Join(caDir, "intermediate"))
		fromRoot, fromInter := root.Client(t, "from-root"), inter.Client(t, "from-inter")
		chained := fromInter
		chained.Certificate = append(chained.Certificate, inter.Cert.Raw)
		out := map[string]string{}
		for _, site := range []string{"root.localhost", "inter.localhost"} {
			for name, cert := range map[string]*stdtls.Certificate{"root's": &fromRoot, "intermediate's": &fromInter,
				"intermediate's with its chain": &chained, "stranger's": &stranger, "none": nil} {
				edit := func(c *stdtls.Config) { c.NextProtos = []string{"http/1.1"} }
				if cert != nil {
					edit = func(c *stdtls.Config) {
						c.NextProtos = []string{"http/1.1"}
						c.Certificates = []stdtls.Certificate{*cert}
					}
				}
				got := tlsOutcome(addr, tlsProbe{name, site, edit})
				if i := strings.Index(got, "body="); i >= 0 {
					got = got[i:] // the handshake's shape is TestOracleTLS's
				}
				out[site+", "+name] = got
			}
		}
		return out
	}

	port, httpPort := servertest.FreePort(t), servertest.FreePort(t)
	storage := t.TempDir()
	_, exited, stop := startCaddy(t, bin, caddyfile(port, httpPort, storage))
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ready(addr, exited)
	want := outcomes(t, addr, filepath.Join(storage, "pki", "authorities", "local"))
	stop()
	t.Logf("Caddy: %q", want)

	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, httpPort := servertest.FreePort(t), servertest.FreePort(t)
		storage := t.TempDir()
		in, _ := startPollproxy(t, backend, caddyfile(port, httpPort, storage))
		defer in.Close()
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		ready(addr, nil)
		got := outcomes(t, addr, filepath.Join(storage, "pollproxy", "ca", "local"))
		for k, w := range want {
			if got[k] != w {
				t.Errorf("%s: pollproxy %q, Caddy %q", k, got[k], w)
			}
		}
	})
}
