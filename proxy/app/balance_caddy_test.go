package app

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// caddyPick is the upstream Caddy's hashing policies (hostByHashing)
// choose for key among dials: the highest xxhash64 of the dial address
// followed by the key, the first on a tie.
func caddyPick(dials []string, key string) int {
	best, bestHash := -1, uint64(0)
	for i, d := range dials {
		if h := xxhash.Sum64String(d + key); h > bestHash {
			best, bestHash = i, h
		}
	}
	return best
}

// caddyCookie is the value of Caddy's lb_policy cookie for an upstream.
func caddyCookie(secret, dial string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(dial))
	return hex.EncodeToString(m.Sum(nil))
}

// TestBalanceAsCaddy: the hashing policies send a request to the upstream
// Caddy sends it to (the same hash of the same key), the query policy
// hashing the decoded values joined with "," (so ?k=a%20b and ?k=a+b go
// one way); the cookie policy's cookie is Caddy's, value and attributes,
// read as net/http reads cookies; and {query.*}, {cookie.*} and the query
// matcher read values the same way.
func TestBalanceAsCaddy(t *testing.T) {
	names := []string{"o0", "o1", "o2"}
	var dials []string
	for _, n := range names {
		dials = append(dials, echoOrigin(t, n))
	}
	ups := strings.Join(dials, " ")
	site := fmt.Sprintf(`	handle /q/* {
		reverse_proxy %[1]s {
			lb_policy query k
		}
	}
	handle /h/* {
		reverse_proxy %[1]s {
			lb_policy header X-Key
		}
	}
	handle /host/* {
		reverse_proxy %[1]s {
			lb_policy header Host
		}
	}
	handle /u/* {
		reverse_proxy %[1]s {
			lb_policy uri_hash
		}
	}
	handle /ip/* {
		reverse_proxy %[1]s {
			lb_policy ip_hash
		}
	}
	handle /cip/* {
		reverse_proxy %[1]s {
			lb_policy client_ip_hash
		}
	}
	handle /c/* {
		reverse_proxy %[1]s {
			lb_policy cookie lb s3cret {
				max_age 1h
			}
		}
	}
	@malformed query k=1
	handle /m {
		respond @malformed "matched"
		respond "not matched"
	}
	respond "{query.k}|{cookie.SESSION}"`, ups)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				get := func(path string, header map[string]string) (string, *http.Response) {
					t.Helper()
					req, _ := http.NewRequest("GET", base+path, nil)
					for k, v := range header {
						req.Header.Set(k, v)
					}
					resp, err := c.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					b, _ := io.ReadAll(resp.Body)
					return string(b), resp
				}
				upstream := func(body string) string { name, _, _ := strings.Cut(body, " "); return name }
				check := func(what, path string, header map[string]string, key string) {
					t.Helper()
					body, _ := get(path, header)
					if want := names[caddyPick(dials, key)]; upstream(body) != want {
						t.Errorf("%s %s: went to %q, Caddy picks %s (key %q)", what, path, upstream(body), want, key)
					}
				}
				for i := range 8 {
					v := fmt.Sprintf("v%d", i)
					check("query", "/q/x?k="+v+"%20"+v, nil, v+" "+v)
					check("query", "/q/x?k="+v+"+"+v, nil, v+" "+v)
					check("query", "/q/x?a=1&k="+v+"&k=2", nil, v+",2")
					check("header", "/h/x", map[string]string{"X-Key": v}, v)
					check("uri", "/u/"+v+"?x=%41", nil, "/u/"+v+"?x=%41")
				}
				check("header Host", "/host/x", nil, fmt.Sprintf("localhost:%d", port))
				check("ip", "/ip/x", nil, "127.0.0.1")
				check("client_ip", "/cip/x", nil, "127.0.0.1")

				// The cookie: Caddy's value for the upstream it names, and
				// Caddy's attributes.
				body, resp := get("/c/x", nil)
				i := slices.Index(names, upstream(body))
				if i < 0 {
					t.Fatalf("cookie policy: answer %q", body)
				}
				want := "lb=" + caddyCookie("s3cret", dials[i]) + "; Path=/; Max-Age=3600; HttpOnly; Secure; SameSite=None"
				if got := resp.Header.Get("Set-Cookie"); got != want {
					t.Errorf("cookie policy: Set-Cookie %q, want %q", got, want)
				}
				for _, ck := range []string{"lb=" + caddyCookie("s3cret", dials[2]), `x=1; lb="` + caddyCookie("s3cret", dials[2]) + `"`} {
					body, resp := get("/c/x", map[string]string{"Cookie": ck})
					if upstream(body) != "o2" || resp.Header.Get("Set-Cookie") != "" {
						t.Errorf("cookie %q: went to %q, Set-Cookie %q; want o2 and none", ck, upstream(body), resp.Header.Get("Set-Cookie"))
					}
				}
				// Request.Cookie's names are exact.
				if _, resp := get("/c/x", map[string]string{"Cookie": "LB=" + caddyCookie("s3cret", dials[2])}); resp.Header.Get("Set-Cookie") == "" {
					t.Error("cookie LB= (another name) was read as lb")
				}

				// Placeholders join query values with "," and read cookie
				// names without case, as Caddy's.
				if body, _ := get("/?k=1&k=a+b&k=c%2Cd", map[string]string{"Cookie": `a=b; session="s1"`}); body != "1,a b,c,d|s1" {
					t.Errorf("placeholders: %q, want %q", body, "1,a b,c,d|s1")
				}
				// A malformed query (';' in a pair) matches no query matcher.
				if body, _ := get("/m?k=1&x=1;y=2", nil); body != "not matched" {
					t.Errorf("query matcher on a malformed query: %q", body)
				}
				if body, _ := get("/m?k=1", nil); body != "matched" {
					t.Errorf("query matcher: %q", body)
				}
			})
		}
	})
}

// TestHostlessUpstreamSpelling: an upstream written ":PORT" is dialled at
// localhost, but hashed, signed and named by {upstream_hostport} as Caddy
// spells it, ":PORT", so its sticky cookie is Caddy's.
func TestHostlessUpstreamSpelling(t *testing.T) {
	o := echoOrigin(t, "o")
	_, oport, _ := strings.Cut(o, ":")
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fmt.Sprintf(`	reverse_proxy :%s {
		lb_policy cookie lb k
		header_up X-Up {upstream_hostport}
	}`, oport))
		resp, err := cls["h1.1"].Get(fmt.Sprintf("https://localhost:%d/", port))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if want := "lb=" + caddyCookie("k", ":"+oport) + "; Path=/; HttpOnly; Secure; SameSite=None"; resp.Header.Get("Set-Cookie") != want {
			t.Errorf("Set-Cookie %q, want %q", resp.Header.Get("Set-Cookie"), want)
		}
		if got := resp.Header.Get("X-Got-Up"); got != ":"+oport {
			t.Errorf("{upstream_hostport} = %q, want %q", got, ":"+oport)
		}
	})
}
