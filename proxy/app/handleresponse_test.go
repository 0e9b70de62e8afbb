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

// TestHandleResponse: reverse_proxy's handle_response with response
// matchers, copy_response, copy_response_headers, replace_status and the
// {rp.*} placeholders, as Caddy documents them; the X-Accel-Redirect
// pattern of Caddy's docs with a second origin in place of file_server;
// a handle_response that does not answer lets the request go on past the
// reverse_proxy; forward_auth's handle_response (oauth2-proxy's
// documented redirect to sign in); Caddy's intercept over a reverse_proxy
// and over respond. Over HTTP/2 and HTTP/1.1 on every
// poller backend.
func TestHandleResponse(t *testing.T) {
	// handle_response, replace_status and intercept share one mechanism:
	// the response's head decides, the request re-enters routes.
	app := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.HasPrefix(r.URL.Path, "/accel/"):
			w.Header().Set("X-Accel-Redirect", "/private/"+strings.TrimPrefix(r.URL.Path, "/accel/"))
			fmt.Fprintf(w, "the app's own body, %d bytes read", len(body))
		case strings.HasPrefix(r.URL.Path, "/err/"):
			w.WriteHeader(503)
			fmt.Fprint(w, "origin error")
		case strings.HasPrefix(r.URL.Path, "/copy/"):
			w.Header().Set("X-Origin", "yes")
			w.WriteHeader(404)
			fmt.Fprint(w, "origin 404 body")
		case strings.HasPrefix(r.URL.Path, "/hdrs/"):
			w.Header().Set("X-Keep", "k")
			w.Header().Set("X-Drop", "d")
			fmt.Fprint(w, "origin body")
		case strings.HasPrefix(r.URL.Path, "/icpt/404"):
			w.Header().Set("X-Origin", "yes")
			w.WriteHeader(404)
			fmt.Fprint(w, "origin 404 body")
		case strings.HasPrefix(r.URL.Path, "/icpt/500"):
			w.WriteHeader(500)
			fmt.Fprint(w, "boom")
		case strings.HasPrefix(r.URL.Path, "/status/"), strings.HasPrefix(r.URL.Path, "/icpt/418"):
			w.WriteHeader(418)
			fmt.Fprint(w, "teapot")
		default:
			w.Header().Set("X-Token", "t1")
			fmt.Fprintf(w, "app %s %s seen=%s", r.Method, r.RequestURI, r.Header.Get("X-Seen"))
		}
	}))
	files := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "file %s %s", r.Method, r.RequestURI)
	}))
	site := fmt.Sprintf(`	handle /accel/* {
		reverse_proxy %[1]s {
			@accel header X-Accel-Redirect *
			handle_response @accel {
				rewrite * {rp.header.X-Accel-Redirect}
				method GET
				reverse_proxy %[2]s
			}
		}
	}
	handle /err/* {
		reverse_proxy %[1]s {
			@error status 500 503
			handle_response @error {
				respond "sorry: {rp.status_code} at {uri}" 502
			}
		}
	}
	handle /copy/* {
		reverse_proxy %[1]s {
			@nf status 404
			handle_response @nf {
				header X-Handled yes
				copy_response 410
			}
		}
	}
	handle /hdrs/* {
		reverse_proxy %[1]s {
			@ok status 2xx
			handle_response @ok {
				copy_response_headers {
					include X-Keep
				}
				respond "replaced"
			}
		}
	}
	handle /status/* {
		reverse_proxy %[1]s {
			@teapot status 418
			replace_status @teapot 200
		}
	}
	handle /fa/* {
		forward_auth %[3]s {
			uri /auth
			@unauth status 401
			handle_response @unauth {
				redir * /login?rd={uri}
			}
		}
		reverse_proxy %[1]s
	}
	handle /icpt/* {
		intercept {
			@nf status 404
			handle_response @nf {
				respond "intercepted {resp.status_code} {resp.header.X-Origin}"
			}
			@teapot status 418
			replace_status @teapot 200
			@boom status 500
			handle_response @boom {
				header X-Empty yes
			}
		}
		reverse_proxy %[1]s
	}
	handle /icpt-respond {
		intercept {
			@nf status 404
			handle_response @nf {
				respond "was {resp.status_code}" 200
			}
		}
		respond "missing" 404
	}
	route {
		reverse_proxy %[1]s {
			@any status 2xx
			handle_response @any {
				request_header X-Seen {rp.header.X-Token}
			}
		}
		respond "fell through: {header.X-Seen}"
	}`, app, files, scriptedAuth(t))
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, site)
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			t.Run(proto, func(t *testing.T) {
				for _, x := range []exchange{
					{method: "GET", path: "/accel/report.pdf?v=2", status: 200, body: "file GET /private/report.pdf?v=2",
						want: map[string]string{"X-Accel-Redirect": ""}},
					{method: "GET", path: "/err/x?y=1", status: 502, body: "sorry: 503 at /err/x?y=1"},
					{method: "GET", path: "/copy/x", status: 410, body: "origin 404 body",
						want: map[string]string{"X-Handled": "yes", "X-Origin": "yes"}},
					{method: "GET", path: "/hdrs/x", status: 200, body: "replaced",
						want: map[string]string{"X-Keep": "k", "X-Drop": ""}},
					{method: "GET", path: "/status/x", status: 200, body: "teapot"},
					{method: "GET", path: "/fa/page?a=1", status: 302, want: map[string]string{"Location": "/login?rd=/fa/page?a=1"}},
					{method: "GET", path: "/fa/page", header: map[string]string{"X-Token": "good"}, status: 200, body: "app GET /fa/page seen="},
					{method: "GET", path: "/other", status: 200, body: "fell through: t1"},
					// intercept: any handler's response, Caddy's {resp.*}
					{method: "GET", path: "/icpt/404", status: 200, body: "intercepted 404 yes"},
					{method: "GET", path: "/icpt/418", status: 200, body: "teapot"},
					{method: "GET", path: "/icpt/500", status: 500, body: "", want: map[string]string{"X-Empty": "yes"}},
					{method: "GET", path: "/icpt/ok", status: 200, body: "app GET /icpt/ok seen="},
					{method: "GET", path: "/icpt-respond", status: 200, body: "was 404"},
				} {
					x.run(t, c, base)
				}
				// The app reads the whole upload before it answers with
				// X-Accel-Redirect; the second origin gets a GET (method),
				// without a body.
				if status, b := send(t, c, "POST", base+"/accel/up", strings.Repeat("p", 150000), nil); status != 200 || b != "file GET /private/up" {
					t.Errorf("POST /accel/up: %d %q, want 200 %q", status, b, "file GET /private/up")
				}
			})
		}
	})
}

// TestHandleResponseOnly: a site whose one directive is a reverse_proxy
// with handle_response still routes its responses (such a site is not
// served by the bare proxy).
func TestHandleResponseOnly(t *testing.T) {
	app := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(404)
		fmt.Fprint(w, "origin 404")
	}))
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		port, cls := startSite(t, backend, fmt.Sprintf("\treverse_proxy %s {\n\t\t@nf status 404\n\t\thandle_response @nf {\n\t\t\trespond \"not here: {uri}\" 404\n\t\t}\n\t}", app))
		for _, c := range cls {
			exchange{method: "GET", path: "/x", status: 404, body: "not here: /x"}.run(t, c, fmt.Sprintf("https://localhost:%d", port))
		}
	})
}
