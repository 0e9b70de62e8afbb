package oracle

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/app"
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
