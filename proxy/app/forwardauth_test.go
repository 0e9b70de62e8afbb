package app

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// scriptedAuth is an auth service for forward_auth, scripted by the
// request's X-Token: good lets it through with the user's fields, login
// redirects to a login page, slow never answers until the test ends, and
// anything else is a 401 with a challenge and a body that says what the
// service received.
func scriptedAuth(t *testing.T) string {
	t.Helper()
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		saw := fmt.Sprintf("%s %s fwd=%s %s cl=%d body=%d", r.Method, r.RequestURI,
			r.Header.Get("X-Forwarded-Method"), r.Header.Get("X-Forwarded-Uri"), r.ContentLength, len(body))
		w.Header().Set("X-Auth-Saw", saw)
		switch r.Header.Get("X-Token") {
		case "good":
			w.Header().Set("Remote-User", "alice")
			w.Header().Set("Remote-Email", "alice@example.com")
			w.Header().Add("X-Groups", "admins")
			w.Header().Add("X-Groups", "dev")
			fmt.Fprint(w, "this body is not the client's")
		case "good-nomail":
			w.Header().Set("Remote-User", "bob")
			w.WriteHeader(204)
		case "login":
			http.Redirect(w, r, "https://login.example.com/?rd="+r.Header.Get("X-Forwarded-Uri"), http.StatusFound)
		case "slow":
			<-hold
		default:
			w.Header().Set("WWW-Authenticate", `Bearer realm="pollproxy-test"`)
			w.WriteHeader(401)
			fmt.Fprint(w, "denied: "+saw)
		}
	}))
}

// userApp is the app behind forward_auth: it answers with what reached it.
func userApp(t *testing.T) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "app %s %s user=%s email=%s groups=%s token=%s body=%s", r.Method, r.RequestURI,
			r.Header.Get("Remote-User"), r.Header.Get("Remote-Email"), r.Header.Get("Remote-Groups"), r.Header.Get("X-Token"), body)
	}))
}

// TestForwardAuth: Caddy's forward_auth against a scripted auth service,
// over HTTP/2 and HTTP/1.1 on every poller backend. A 2xx lets the request
// (and its body) on to the app with the copied fields, and nothing else of
// the auth answer; any other answer is the client's as the auth service
// wrote it; an auth service that is down is a 502, one too slow a 504.
func TestForwardAuth(t *testing.T) {
	authAddr, app := scriptedAuth(t), userApp(t)
	down := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	site := fmt.Sprintf(`	header X-Site yes
	handle /down/* {
		forward_auth %[3]s {
			uri /auth
		}
		reverse_proxy %[2]s
	}
	handle /slow/* {
		forward_auth %[1]s {
			uri /auth
			transport http {
				response_header_timeout 200ms
			}
		}
		reverse_proxy %[2]s
	}
	handle {
		forward_auth %[1]s {
			uri /auth?from=pollproxy
			copy_headers Remote-User Remote-Email X-Groups>Remote-Groups
		}
		reverse_proxy %[2]s
	}`, authAddr, app, down)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/page?x=1", header: map[string]string{"X-Token": "good"}, status: 200,
						body: "app GET /page?x=1 user=alice email=alice@example.com groups=admins,dev token=good body=",
						want: map[string]string{"X-Site": "yes", "Remote-User": "", "X-Auth-Saw": ""}},
					// A field copy_headers names is the auth service's or nobody's.
					{method: "GET", path: "/p", header: map[string]string{"X-Token": "good-nomail", "Remote-Email": "spoofed@example.com"}, status: 200,
						body: "app GET /p user=bob email= groups= token=good-nomail body="},
					{method: "GET", path: "/private", status: 401, body: "denied: GET /auth?from=pollproxy fwd=GET /private cl=0 body=0",
						want: map[string]string{"Www-Authenticate": `Bearer realm="pollproxy-test"`, "X-Site": "yes"}},
					{method: "GET", path: "/private?a=b", header: map[string]string{"X-Token": "login"}, status: 302, body: "*",
						want: map[string]string{"Location": "https://login.example.com/?rd=/private?a=b"}},
					{method: "GET", path: "/down/x", header: map[string]string{"X-Token": "good"}, status: 502, body: "bad gateway*"},
					{method: "GET", path: "/slow/x", header: map[string]string{"X-Token": "slow"}, status: 504, body: "gateway timeout*"},
				} {
					x.run(t, c, base)
				}
				// The auth service gets no body (method GET, as Caddy's
				// expansion); the app gets all of it after a 2xx.
				for _, tok := range []string{"good", "no"} {
					status, b := send(t, c, "POST", base+"/upload", strings.Repeat("b", 100000), map[string]string{"X-Token": tok})
					want := "app POST /upload user=alice email=alice@example.com groups=admins,dev token=good body=" + strings.Repeat("b", 100000)
					if tok == "no" {
						want = "denied: GET /auth?from=pollproxy fwd=POST /upload cl=0 body=0"
					}
					if b != want {
						t.Errorf("POST X-Token %s: %d %.120q, want %.120q", tok, status, b, want)
					}
				}
			})
		}
	})
}
