package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestHandleErrors: the errors pollproxy answers itself (an origin down:
// 502, too slow: 504, an auth service down) and the error directive's
// re-enter the site's handle_errors routes, as in Caddy: status-code
// blocks first, {err.*} placeholders, the request as it arrived (before
// rewrites), a reverse proxy to an error service; an error inside the
// error routes is the first error's status with an empty body. Over
// HTTP/2 and HTTP/1.1 on every poller backend.
func TestHandleErrors(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	hold := make(chan struct{})
	defer close(hold)
	slow := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hold }))
	errSvc := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(599)
		fmt.Fprintf(w, "error service: %s %s for %s", r.Method, r.RequestURI, r.Header.Get("X-Error"))
	}))
	site := fmt.Sprintf(`	handle /down/* {
		reverse_proxy %[1]s
	}
	handle /double/* {
		reverse_proxy %[1]s
	}
	handle /slow/* {
		reverse_proxy %[2]s {
			transport http {
				response_header_timeout 200ms
			}
		}
	}
	handle /auth/* {
		forward_auth %[1]s {
			uri /auth
		}
		respond "never"
	}
	handle /private/* {
		error "no entry for {path}" 403
	}
	handle /gone {
		error 410
	}
	handle /svc/* {
		error 503
	}
	handle {
		rewrite * /rewritten{uri}
		reverse_proxy %[1]s
	}
	handle_errors {
		respond "custom {err.status_code} {err.message}"
	}
	handle_errors 5xx 404 {
		handle /svc/* {
			reverse_proxy %[3]s {
				header_up X-Error "{err.status_code} {err.status_text}"
			}
		}
		handle /double/* {
			reverse_proxy %[1]s
		}
		@five expression {err.status_code} >= 500
		handle @five {
			respond "{err.status_code} {err.status_text}: {err.message} ({method} {uri}) id={err.id}"
		}
	}`, closed, slow, errSvc)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/down/x", status: 502, body: "502 Bad Gateway: bad gateway*"},
					{method: "GET", path: "/slow/x", status: 504, body: "504 Gateway Timeout: gateway timeout: upstream sent no response head in time (GET /slow/x) id=*"},
					{method: "GET", path: "/auth/x", status: 502, body: "502 Bad Gateway: bad gateway*"},
					{method: "GET", path: "/other?q=1", status: 502, body: "502 Bad Gateway: *"},
					{method: "GET", path: "/private/x", status: 403, body: "custom 403 no entry for /private/x"},
					{method: "GET", path: "/gone", status: 410, body: "custom 410 "},
					{method: "GET", path: "/svc/a?b=c", status: 599, body: "error service: GET /svc/a?b=c for 503 Service Unavailable"},
					// The error routes' own reverse proxy fails: Caddy's
					// answer, the first status with nothing more.
					{method: "GET", path: "/double/x", status: 502, body: ""},
				} {
					x.run(t, c, base)
				}
				// The request as it arrived, not as rewritten; the message
				// is pollproxy's; every occurrence has its own id.
				_, b1 := send(t, c, "GET", base+"/other?q=1", "", nil)
				_, b2 := send(t, c, "GET", base+"/other?q=1", "", nil)
				if !strings.Contains(b1, "(GET /other?q=1) id=") || b1[strings.LastIndex(b1, "id="):] == b2[strings.LastIndex(b2, "id="):] {
					t.Errorf("bodies %q and %q: want the original request and two different ids", b1, b2)
				}
				// A body the failed handler never read is drained.
				if status, b := send(t, c, "POST", base+"/down/upload", strings.Repeat("u", 200000), nil); status != 502 || !strings.Contains(b, "(POST /down/upload)") {
					t.Errorf("POST /down/upload: %d %q", status, b)
				}
			})
		}
	})
}

// TestErrorDirective: without handle_errors, the error directive answers
// with its status and an empty body, as in Caddy.
func TestErrorDirective(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, "\terror /private/* \"Unauthorized\" 401\n\terror /boom 500\n\trespond \"open\"")
		base := fmt.Sprintf("https://localhost:%d", port)
		for _, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/private/x", status: 401, body: ""},
				{method: "GET", path: "/boom", status: 500, body: ""},
				{method: "GET", path: "/open", status: 200, body: "open"},
			} {
				x.run(t, c, base)
			}
		}
	})
}

// TestHandleErrorsUnmatched: an error that no error route answers (the
// site's handle_errors blocks name other statuses, or the one that
// matches only edits fields) is its status with an empty body, as Caddy's
// error routes end, never the empty 200 of a request no route answers;
// the fields set before the error and by the error routes stay.
func TestHandleErrorsUnmatched(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	site := fmt.Sprintf(`	header X-Site kept
	error /gone 410
	error /nf 404
	handle /down/* {
		reverse_proxy %s
	}
	handle_errors 5xx {
		respond /svc/* "server error {err.status_code}"
	}
	handle_errors 404 {
		header X-Handled yes
	}
	respond "ok"`, closed)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/gone", status: 410, body: "", want: map[string]string{"X-Site": "kept", "Content-Type": ""}},
					{method: "GET", path: "/down/x", status: 502, body: "", want: map[string]string{"X-Site": "kept"}},
					{method: "GET", path: "/nf", status: 404, body: "", want: map[string]string{"X-Site": "kept", "X-Handled": "yes"}},
					{method: "GET", path: "/", status: 200, body: "ok"},
				} {
					x.run(t, c, base)
				}
			})
		}
	})
}

// TestHandleErrorsBehindEncode: on a site with encode, the errors
// pollproxy answers itself (an origin down) and the error directive's
// still reach handle_errors, whose answer is not the encoder's, as in
// Caddy (its encode steps aside for an error).
func TestHandleErrorsBehindEncode(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	site := fmt.Sprintf(`	encode gzip
	handle /down/* {
		reverse_proxy %s
	}
	handle /private/* {
		error "no entry" 403
	}
	handle_errors {
		respond "handled {err.status_code} {err.message}"
	}`, closed)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				gzip := map[string]string{"Accept-Encoding": "gzip"}
				for _, x := range []exchange{
					{method: "GET", path: "/down/x", header: gzip, status: 502, body: "handled 502 bad gateway*",
						want: map[string]string{"Content-Encoding": ""}},
					{method: "GET", path: "/private/x", header: gzip, status: 403, body: "handled 403 no entry",
						want: map[string]string{"Content-Encoding": ""}},
				} {
					x.run(t, c, base)
				}
			})
		}
	})
}

// TestErrorDirectiveLogged: on a site with an access log, the error
// directive reaches handle_errors, and the log has the one answer the
// client got.
func TestErrorDirectiveLogged(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		logFile := filepath.Join(t.TempDir(), "access.log")
		port, cls := startSite(t, backend, fmt.Sprintf(`	log {
		output file %s
		format json
	}
	error /private/* "no entry" 403
	respond "open"
	handle_errors {
		respond "handled {err.status_code} {err.message}"
	}`, logFile))
		base := fmt.Sprintf("https://localhost:%d", port)
		n := 0
		for _, c := range cls {
			exchange{method: "GET", path: "/private/x", status: 403, body: "handled 403 no entry"}.run(t, c, base)
			n++
		}
		for _, line := range awaitLines(t, logFile, n) {
			if !strings.Contains(line, `"status":403`) || !strings.Contains(line, `"uri":"/private/x"`) {
				t.Errorf("access log entry %s: want status 403 for /private/x", line)
			}
		}
	})
}

// TestHandleErrorsFileServer: file_server's own errors (a file that is
// not there, a method it does not serve) are errors for handle_errors,
// as Caddy's file_server returns them. The error pages of Caddy's docs
// (rewrite to the page, file_server again) are found under the site's
// root and served with the error's status, for any method, as Caddy's
// file_server does in error routes. Without handle_errors these errors
// stay the bare status (TestFileServer).
func TestHandleErrorsFileServer(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "index.html"), []byte("home"), 0o644)
	os.WriteFile(filepath.Join(root, "404.html"), []byte("custom not found page"), 0o644)
	os.WriteFile(filepath.Join(root, "403.html"), []byte("custom forbidden page"), 0o644)
	site := fmt.Sprintf(`	root * %s
	encode gzip
	error /private/* 403
	handle /strict/* {
		try_files {path} =404
		file_server
	}
	file_server
	handle_errors 404 403 {
		rewrite * /{err.status_code}.html
		file_server
	}
	handle_errors {
		respond "handled {err.status_code}"
	}`, root)
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/", status: 200, body: "home"},
					{method: "GET", path: "/missing.html", status: 404, body: "custom not found page"},
					{method: "GET", path: "/no/such/dir/", status: 404, body: "custom not found page"},
					{method: "POST", path: "/missing.html", status: 404, body: "custom not found page"},
					{method: "GET", path: "/private/x", status: 403, body: "custom forbidden page"},
					{method: "GET", path: "/strict/nothing", status: 404, body: "custom not found page"},
					// The Allow (and Vary) file_server had set stay on the
					// error routes' answer, as in Caddy.
					{method: "DELETE", path: "/index.html", status: 405, body: "handled 405",
						want: map[string]string{"Allow": "GET, HEAD", "Vary": "Accept-Encoding"}},
				} {
					x.run(t, c, base)
				}
			})
		}
	})
}

// TestHandleErrorsBasicAuth: basic_auth's 401 is an error, as Caddy's
// authentication returns it: the site's error routes render it, with
// {err.message} "not authenticated", the challenge basic_auth set and the
// immediate header edits, never the deferred ones; whether the request
// had no credentials or wrong ones (compared off the loop), with a body
// or without. Over HTTP/2 and HTTP/1.1 on every poller backend.
func TestHandleErrorsBasicAuth(t *testing.T) {
	site := fmt.Sprintf(`	header X-Now now
	header >X-Later later
	basic_auth /admin/* {
		alice %s
	}
	respond "ok {http.auth.user.id}"
	handle_errors {
		respond "handled {err.status_code} {err.message}"
	}`, bcryptOf(t, "pw"))
	refused := map[string]string{"WWW-Authenticate": `Basic realm="restricted"`, "X-Now": "now", "X-Later": ""}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/admin/x", status: 401, body: "handled 401 not authenticated", want: refused},
					{method: "GET", path: "/admin/x", header: basic("alice", "wrong"), status: 401, body: "handled 401 not authenticated", want: refused},
					{method: "GET", path: "/admin/x", header: basic("alice", "pw"), status: 200, body: "ok alice",
						want: map[string]string{"WWW-Authenticate": "", "X-Now": "now", "X-Later": "later"}},
				} {
					x.run(t, c, base)
				}
				// Refused with a body: the body is read and dropped.
				status, b := send(t, c, "POST", base+"/admin/upload", strings.Repeat("u", 100000), basic("alice", "nope"))
				if status != 401 || b != "handled 401 not authenticated" {
					t.Errorf("POST /admin/upload with a wrong password: %d %q", status, b)
				}
			})
		}
	})
}
