package config

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestSchemes: which site addresses are plain HTTP and which HTTPS, and on
// which port, by Caddy's rules (its Caddyfile adapter's detectConflictingSchemes).
func TestSchemes(t *testing.T) {
	for _, tc := range []struct {
		global, addr string
		tls          bool
		port         int
		cleartext    bool
	}{
		{"", "http://example.com", false, 80, true},
		{"", "http://example.com:8080", false, 8080, true},
		{"", "http://localhost:8080", false, 8080, true},
		{"", ":80", false, 80, true},
		{"", ":8080", false, 8080, true},
		{"", "example.com:80", false, 80, true},
		{"", "https://example.com", false, 443, false},
		{"", "https://:8443", false, 8443, false},
		{"", "example.com", false, 443, false},
		{"", "localhost", false, 443, false},
		{"", "localhost:8443", false, 8443, false},
		{"", "127.0.0.1:8443", false, 8443, false},
		{"", ":443", false, 443, false},
		{"", ":8443", true, 8443, false}, // a tls directive makes the port HTTPS
		// ... but not the http_port nor an http:// site: tls internal or
		// EMAIL makes no connection policy, and Caddy drops it there.
		{"", ":80", true, 80, true},
		{"", "example.com:80", true, 80, true},
		{"", "http://localhost:8080", true, 8080, true},
		// auto_https off changes no scheme: the named site is HTTPS.
		{"auto_https off", "example.com", false, 443, false},
		{"auto_https disable_certs", "example.com", false, 443, false},
		{"http_port 8080", ":8080", false, 8080, true},
		{"http_port 8080", "http://example.com", false, 8080, true},
		{"https_port 8443", "example.com", false, 8443, false},
		{"https_port 8443", ":8443", false, 8443, false},
		// A name on the port turns on automatic HTTPS for all of it.
		{"", ":8080 {\n\trespond ok\n}\nlocalhost:8080", false, 8080, false},
		{"", ":8080 {\n\trespond ok\n}\nhttp://localhost:8080", false, 8080, true},
	} {
		name := fmt.Sprintf("%s %s tls=%v", tc.global, tc.addr, tc.tls)
		body := tc.addr + " {\n\trespond ok\n"
		if tc.tls {
			body += "\ttls internal\n"
		}
		body += "}\n"
		if tc.global != "" {
			body = "{\n\t" + tc.global + "\n}\n" + body
		}
		c, err := Parse("Caddyfile", []byte(body))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		a := c.Sites[0].Addrs[0]
		ls := c.Listeners()
		if a.Port != tc.port || a.Cleartext != tc.cleartext || len(ls) != 1 || ls[0].Cleartext != tc.cleartext {
			t.Errorf("%s: port %d cleartext %v (listener %+v), want %d %v", name, a.Port, a.Cleartext, ls[0], tc.port, tc.cleartext)
		}
	}
}

// TestRedirectHosts: every host of an HTTPS site is redirected from the
// http_port to its port (none for the https_port), unless auto_https says
// otherwise or an http:// site serves the name there.
func TestRedirectHosts(t *testing.T) {
	sites := "example.com {\n\trespond ok\n}\nlocalhost:8443 {\n\trespond ok\n}\n:8080 {\n\trespond ok\n}\nhttp://plain.example.com {\n\trespond ok\n}\nplain.example.com {\n\trespond ok\n}\n"
	for _, tc := range []struct{ global, want string }{
		{"", "example.com:443 localhost:8443"},
		{"auto_https disable_redirects", ""},
		{"auto_https off", ""}, // example.com is served, its handshakes fail without a certificate
		{"http_port off", ""},
		// Caddy leaves the https_port out of its redirect (the outside
		// reaches it as 443), whichever site is on it.
		{"https_port 8443", "example.com:443 localhost:443"},
	} {
		c, err := Parse("Caddyfile", []byte("{\n\t"+tc.global+"\n}\n"+sites))
		if tc.want == "error" {
			if err == nil {
				t.Errorf("%q: no error", tc.global)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.global, err)
			continue
		}
		var got []string
		for h, p := range c.RedirectHosts() {
			got = append(got, fmt.Sprintf("%s:%d", h, p))
		}
		if s := strings.Join(slices.Sorted(slices.Values(got)), " "); s != tc.want {
			t.Errorf("%q: redirects %q, want %q", tc.global, s, tc.want)
		}
	}
}

// TestTLSWithoutConnectionPolicy: a tls directive that only says where
// certificates come from (an e-mail, internal) leaves a site on the
// http_port in cleartext, as in Caddy; one that changes handshakes is
// refused there.
func TestTLSWithoutConnectionPolicy(t *testing.T) {
	c, err := Parse("Caddyfile", []byte(":80 {\n\trespond ok\n\ttls you@example.com\n}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if !c.Sites[0].Cleartext() || c.Sites[0].TLS.Email != "you@example.com" {
		t.Errorf("cleartext %v email %q", c.Sites[0].Cleartext(), c.Sites[0].TLS.Email)
	}
	_, err = Parse("Caddyfile", []byte(":80 {\n\trespond ok\n\ttls {\n\t\tclient_auth {\n\t\t\tmode request\n\t\t}\n\t}\n}\n"))
	if err == nil || !strings.Contains(err.Error(), "attempts to configure TLS connection policies") {
		t.Errorf("client_auth on :80: %v", err)
	}
}
