package app

import (
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/offload"
	"github.com/pollproxy/pollproxy/proxy/auth"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// authOrigin is an app that answers with the path, the user header_up
// passed, the Authorization field it got, and the length of the body.
func authOrigin(t *testing.T) string {
	t.Helper()
	return servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s user=%s auth=%t body=%d", r.URL.Path, r.Header.Get("X-User"), r.Header.Get("Authorization") != "", len(b))
	}))
}

// bcryptOf hashes password at bcrypt's lowest cost: the tests are about
// where the comparison runs, not how long it takes.
func bcryptOf(t *testing.T, password string) string {
	t.Helper()
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func basic(user, password string) map[string]string {
	return map[string]string{"Authorization": "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))}
}

// TestBasicAuth: Caddy's basic_auth over HTTP/2 and HTTP/1.1 on every
// poller backend: the 401 and its challenge, wrong passwords and unknown
// users refused alike, the right password proxied with the user in
// {http.auth.user.id} and the Authorization field passed on as Caddy
// does, Caddy's older base64 hash form, a realm, and a matcher protecting
// only its paths.
func TestBasicAuth(t *testing.T) {
	up := authOrigin(t)
	b64 := base64.StdEncoding.EncodeToString([]byte(bcryptOf(t, "hunter2")))
	secret, upload, pw := bcryptOf(t, "secret"), bcryptOf(t, "upload"), bcryptOf(t, "pw")
	site := fmt.Sprintf(`	header X-Frame-Options DENY
	header X-Who "u={http.auth.user.id}"
	basic_auth /admin/* {
		alice %[1]s
		bob %[2]s
		poster-h2 %[3]s
		poster-h1.1 %[3]s
	}
	basicauth /old/* bcrypt "Old Realm" {
		carol %[4]s
		erin %[3]s
	}
	handle /old/inner/* {
		basic_auth bcrypt Inner {
			carol %[5]s
			erin %[6]s
		}
		respond "inner {http.auth.user.id}"
	}
	respond /admin/json `+"`"+`{"user": "{http.auth.user.id}", "n": {"a": 1}}`+"`"+`
	reverse_proxy %[7]s {
		header_up X-User {http.auth.user.id}
	}`, secret, b64, upload, pw, bcryptOf(t, "pw"), bcryptOf(t, "other"), up)
	// The header directive runs before basic_auth: its edit is on the 401.
	// A refused request has no user, even one its credentials claim.
	challenge := map[string]string{"WWW-Authenticate": `Basic realm="restricted"`, "X-Frame-Options": "DENY", "X-Who": "u="}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				// The first request of a user with a body parks while its
				// password is compared; the body waits and then reaches
				// the origin whole.
				req, _ := http.NewRequest("POST", base+"/admin/upload", strings.NewReader(strings.Repeat("x", 100000)))
				for k, v := range basic("poster-"+proto, "upload") {
					req.Header.Set(k, v)
				}
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := "/admin/upload user=poster-" + proto + " auth=true body=100000"; resp.StatusCode != 200 || string(b) != want {
					t.Errorf("POST with a body: %d %q, want 200 %q", resp.StatusCode, b, want)
				}
				for _, x := range []exchange{
					{method: "GET", path: "/admin/x", status: 401, body: "", want: challenge},
					{method: "GET", path: "/admin/x", header: basic("alice", "wrong"), status: 401, body: "", want: challenge},
					{method: "GET", path: "/admin/x", header: basic("mallory", "secret"), status: 401, body: "", want: challenge},
					{method: "GET", path: "/admin/x", header: map[string]string{"Authorization": "Bearer abc"}, status: 401, want: challenge},
					{method: "GET", path: "/admin/x", header: basic("alice", "secret"), status: 200, body: "/admin/x user=alice auth=true body=0",
						want: map[string]string{"WWW-Authenticate": ""}},
					// Again: from this loop's cache now, with the same answer.
					{method: "GET", path: "/admin/y", header: basic("alice", "secret"), status: 200, body: "/admin/y user=alice auth=true body=0"},
					{method: "GET", path: "/admin/y", header: basic("alice", "secret2"), status: 401, want: challenge},
					{method: "GET", path: "/admin/z", header: basic("bob", "hunter2"), status: 200, body: "/admin/z user=bob auth=true body=0"},
					{method: "POST", path: "/admin/z", header: basic("bob", "nope"), status: 401, want: challenge},
					{method: "GET", path: "/old/a", header: basic("alice", "secret"), status: 401,
						want: map[string]string{"WWW-Authenticate": `Basic realm="Old Realm"`}},
					{method: "GET", path: "/old/a", header: basic("carol", "pw"), status: 200, body: "/old/a user=carol auth=true body=0"},
					{method: "GET", path: "/public", status: 200, body: "/public user= auth=false body=0"},
					// Two basic_auth on one request: each must pass, and
					// the first that fails answers with its realm.
					{method: "GET", path: "/old/inner/x", header: basic("carol", "pw"), status: 200, body: "inner carol"},
					// Caddy's respond fills what it knows and keeps other braces.
					{method: "GET", path: "/admin/json", header: basic("alice", "secret"), status: 200, body: `{"user": "alice", "n": {"a": 1}}`},
					{method: "GET", path: "/old/inner/x", header: basic("carol", "nope"), status: 401,
						want: map[string]string{"WWW-Authenticate": `Basic realm="Old Realm"`}},
					{method: "GET", path: "/old/inner/x", header: basic("erin", "upload"), status: 401,
						want: map[string]string{"WWW-Authenticate": `Basic realm="Inner"`}},
					{method: "GET", path: "/old/inner/x", status: 401,
						want: map[string]string{"WWW-Authenticate": `Basic realm="Old Realm"`}},
				} {
					x.run(t, c, base)
				}
			})
		}
	})
}

// TestBasicAuthOffLoop: a password comparison never runs on the loop.
// With every worker of the pool held, a request with credentials waits
// in the pool's queue, and a request on the same HTTP/2 connection — so
// the same loop — that needs no password is answered meanwhile; the
// first is answered once a worker is free.
func TestBasicAuthOffLoop(t *testing.T) {
	up := authOrigin(t)
	site := fmt.Sprintf("\tbasic_auth /admin/* {\n\t\talice %s\n\t}\n\treverse_proxy %s", bcryptOf(t, "secret"), up)
	pool := auth.Shared()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		c := cls["h2"]
		release := holdWorkers(t, pool)
		defer release()
		// Open the connection first, so both requests share it.
		exchange{method: "GET", path: "/public", status: 200, body: "/public user= auth=false body=0"}.run(t, c, base)

		req, _ := http.NewRequest("GET", base+"/admin/x", nil)
		req.SetBasicAuth("alice", "secret")
		out := doAsync(c, req)
		for i := 0; pool.Queued() == 0; i++ {
			if i == 10000 {
				t.Fatal("the check never reached the pool's queue")
			}
			select {
			case got := <-out:
				t.Fatalf("answered while every worker was held: %s", got)
			default:
			}
			time.Sleep(time.Millisecond) // waiting for a state, bounded; nothing is timed
		}
		exchange{method: "GET", path: "/public", status: 200, body: "/public user= auth=false body=0"}.run(t, c, base)
		select {
		case got := <-out:
			t.Fatalf("answered while every worker was held: %s", got)
		default:
		}
		release()
		if got, want := <-out, "200 /admin/x user= auth=true body=0"; got != want {
			t.Errorf("after the workers were freed: %q, want %q", got, want)
		}
	})
}

// TestBasicAuthPoolFull: with every worker held and the queue full, a
// request that needs a comparison is refused at once with 503 and
// Retry-After — nothing waits for room — while credentials this loop saw
// pass are still let in without the pool.
func TestBasicAuthPoolFull(t *testing.T) {
	up := authOrigin(t)
	site := fmt.Sprintf("\tbasic_auth {\n\t\talice %s\n\t\tbob %s\n\t}\n\treverse_proxy %s", bcryptOf(t, "secret"), bcryptOf(t, "pw"), up)
	pool := auth.Shared()
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for _, c := range cls {
			exchange{method: "GET", path: "/a", header: basic("alice", "secret"), status: 200, body: "/a user= auth=true body=0"}.run(t, c, base)
		}
		defer fillPool(t, pool)()
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				exchange{method: "GET", path: "/b", header: basic("bob", "pw"), status: 503, body: "pollproxy: too many password checks at once; try again\n",
					want: map[string]string{"Retry-After": "1"}}.run(t, c, base)
				exchange{method: "GET", path: "/b", header: basic("alice", "secret"), status: 200, body: "/b user= auth=true body=0"}.run(t, c, base)
			})
		}
	})
}

// fillPool holds every worker of pool and fills its queue, whose room is
// bounded, until release is called.
func fillPool(t *testing.T, pool *offload.Pool) (release func()) {
	t.Helper()
	freeWorkers := holdWorkers(t, pool)
	full := make(chan struct{})
	for pool.Submit(func() { <-full }) == nil {
	}
	return func() { freeWorkers(); close(full) }
}

// holdWorkers keeps every worker of pool busy until release is called
// (once or more).
func holdWorkers(t *testing.T, pool *offload.Pool) (release func()) {
	t.Helper()
	ch := make(chan struct{})
	held := make(chan struct{}, pool.Workers())
	for range pool.Workers() {
		if pool.Submit(func() { held <- struct{}{}; <-ch }) != nil {
			t.Fatal("the pool is busy before the test")
		}
	}
	for range pool.Workers() {
		<-held
	}
	var once sync.Once
	return func() { once.Do(func() { close(ch) }) }
}
