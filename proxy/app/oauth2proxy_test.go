package app

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// oauth2Proxy is oauth2-proxy, built once per test binary from the
// version pinned in tools/oauth2proxy/go.mod: a module of its own, so
// its dependencies never move the product's.
var oauth2Proxy struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

func buildOAuth2Proxy(t *testing.T) string {
	t.Helper()
	oauth2Proxy.once.Do(func() {
		modfile, err := filepath.Abs("../../tools/oauth2proxy/go.mod")
		if err != nil {
			oauth2Proxy.err = err
			return
		}
		// Not t.TempDir: the binary outlives the first test that builds it.
		oauth2Proxy.dir, oauth2Proxy.err = os.MkdirTemp("", "pollproxy-oauth2-proxy")
		if oauth2Proxy.err != nil {
			return
		}
		oauth2Proxy.bin = filepath.Join(oauth2Proxy.dir, "oauth2-proxy")
		cmd := exec.Command("go", "build", "-modfile="+modfile, "-o", oauth2Proxy.bin, "github.com/oauth2-proxy/oauth2-proxy/v7")
		cmd.Dir = filepath.Dir(modfile)
		oauth2Proxy.out, oauth2Proxy.err = cmd.CombinedOutput()
	})
	if oauth2Proxy.err != nil {
		t.Fatalf("building oauth2-proxy (tools/oauth2proxy/go.mod): %v\n%s", oauth2Proxy.err, oauth2Proxy.out)
	}
	return oauth2Proxy.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if oauth2Proxy.dir != "" {
		os.RemoveAll(oauth2Proxy.dir)
	}
	os.Exit(code)
}

// startOAuth2Proxy runs oauth2-proxy on a free loopback port as an auth
// service for forward_auth: its users are an htpasswd file's (alice,
// password secret), signed in with its own form; its OIDC provider is
// never reached. It returns the address.
func startOAuth2Proxy(t *testing.T) string {
	t.Helper()
	bin := buildOAuth2Proxy(t)
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	htpasswd := filepath.Join(dir, "htpasswd")
	os.WriteFile(htpasswd, []byte("alice:"+string(hash)+"\n"), 0o600)
	addr := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	never := "http://127.0.0.1:1"
	cmd := exec.Command(bin, "--http-address="+addr, "--provider=oidc", "--skip-oidc-discovery",
		"--oidc-issuer-url="+never+"/", "--login-url="+never+"/auth", "--redeem-url="+never+"/token",
		"--oidc-jwks-url="+never+"/jwks", "--client-id=pollproxy-test", "--client-secret=unused",
		"--cookie-secret=0123456789abcdef0123456789abcdef", "--email-domain=*", "--upstream=static://202",
		"--htpasswd-file="+htpasswd, "--set-xauthrequest", "--reverse-proxy", "--trusted-proxy-ip=127.0.0.1/32")
	runListening(t, "oauth2-proxy", cmd, addr)
	return addr
}

// TestForwardAuthOAuth2Proxy: forward_auth in front of an app with
// oauth2-proxy as the auth service, configured as its documentation
// configures it for Caddy: /oauth2/* goes to oauth2-proxy, everything
// else asks its /oauth2/auth first, and its 401 is turned into a redirect
// to its sign-in page (handle_response). After signing in through
// pollproxy, its 202 lets the request on with the user oauth2-proxy
// names, never one the client sent. Over HTTP/2 and
// HTTP/1.1 on every poller backend.
func TestForwardAuthOAuth2Proxy(t *testing.T) {
	o2p, app := startOAuth2Proxy(t), userAppAuthRequest(t)
	site := fmt.Sprintf(`	handle /oauth2/* {
		reverse_proxy %[1]s {
			header_up X-Real-IP {remote_host}
			header_up X-Forwarded-Uri {uri}
		}
	}
	handle {
		forward_auth %[1]s {
			uri /oauth2/auth
			header_up X-Real-IP {remote_host}
			copy_headers X-Auth-Request-User X-Auth-Request-Email>X-Email
			@error status 401
			handle_response @error {
				redir * /oauth2/sign_in?rd={scheme}://{host}{uri}
			}
		}
		reverse_proxy %[2]s
	}`, o2p, app)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				signIn := "/oauth2/sign_in?rd=https://localhost/dashboard"
				exchange{method: "GET", path: "/dashboard", header: map[string]string{"X-Auth-Request-User": "mallory"},
					status: 302, want: map[string]string{"Location": signIn}}.run(t, c, base)
				exchange{method: "GET", path: signIn, status: 200, body: "\n<!DOCTYPE html>*"}.run(t, c, base)
				form := url.Values{"username": {"alice"}, "password": {"secret"}, "rd": {"/dashboard"}}
				resp, err := c.Post(base+"/oauth2/sign_in", "application/x-www-form-urlencoded", strings.NewReader(form.Encode()))
				if err != nil {
					t.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				var session string
				for _, ck := range resp.Cookies() {
					if ck.Name == "_oauth2_proxy" {
						session = ck.Name + "=" + ck.Value
					}
				}
				if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/dashboard" || session == "" {
					t.Fatalf("sign in: %d Location %q, session cookie %q; want 302 to /dashboard with one",
						resp.StatusCode, resp.Header.Get("Location"), session)
				}
				exchange{method: "GET", path: "/dashboard?tab=1", header: map[string]string{"Cookie": session, "X-Auth-Request-User": "mallory"},
					status: 200, body: "app GET /dashboard?tab=1 user=alice email="}.run(t, c, base)
				exchange{method: "GET", path: "/dashboard", header: map[string]string{"Cookie": "_oauth2_proxy=forged"},
					status: 302, want: map[string]string{"Location": signIn}}.run(t, c, base)
			})
		}
	})
}

// userAppAuthRequest is the app behind oauth2-proxy: it answers with the
// user fields that reached it.
func userAppAuthRequest(t *testing.T) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "app %s %s user=%s email=%s", r.Method, r.RequestURI,
			r.Header.Get("X-Auth-Request-User"), r.Header.Get("X-Email"))
	}))
}
