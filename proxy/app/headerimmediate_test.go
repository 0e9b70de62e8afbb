package app

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// headerSite's header directives: immediate ones (Caddy applies them to
// the response header map before the handlers run) and deferred ones
// (>Field, a deletion, defer: applied when the head is written).
const headerSite = `	header X-Now now
	header X-Both site
	header Server site-server
	header Vary X-Site
	header /files/* Content-Type text/x-site
	header >X-Later later
	header >X-Order first
	header >X-Order second
	header -X-Gone
	header X-Defer deferred {
		defer
	}
	header X-Path {path}
	header >X-Path-Later {path}
	header X-User "u={http.auth.user.id}"
	header >X-User-Later "u={http.auth.user.id}"
`

// fieldValues is what a response must carry: every value of each field,
// in order (none: absent).
type fieldValues map[string][]string

func (want fieldValues) check(t *testing.T, what string, resp *http.Response) {
	t.Helper()
	for k, v := range want {
		if got := resp.Header.Values(k); !slices.Equal(got, v) {
			t.Errorf("%s: %s = %q, want %q", what, k, got, v)
		}
	}
}

// TestHeaderImmediate: header without defer, a deletion or >Field edits
// the response's fields before the handler answers, as Caddy's does: an
// origin's fields are added to them (so a field both set is sent twice,
// and the Server set goes), respond, redir and file_server set theirs
// over them (file_server keeping a Content-Type set and adding to Vary),
// and error answers, bare or handle_errors', carry them. Deferred edits
// apply to the head alone, the later directive first, and never reach an
// error's answer. Over HTTP/2 and HTTP/1.1 on every poller backend.
func TestHeaderImmediate(t *testing.T) {
	closed := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	o := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Both", "origin")
		w.Header().Set("X-Gone", "yes")
		w.Header().Set("X-Order", "origin")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte("from origin"))
	}))
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "files"), 0o755)
	os.WriteFile(filepath.Join(root, "files", "a.txt"), []byte("file a"), 0o644)
	routes := fmt.Sprintf(`	root * %s
	rewrite /rw /respond
	handle /auth {
		basic_auth {
			alice %s
		}
		respond "authed"
	}
	handle /proxy {
		reverse_proxy %s
	}
	handle /respond {
		respond "hi"
	}
	handle /redir {
		redir * /elsewhere
	}
	handle /files/* {
		file_server
	}
	handle /down {
		reverse_proxy %s
	}
	handle /error {
		error 418
	}
	handle /copy {
		reverse_proxy %s {
			@ok status 200
			handle_response @ok {
				copy_response_headers {
					include Content-Type X-Both
				}
				respond "replaced"
			}
		}
	}
`, root, bcryptOf(t, "pw"), o, closed, o)
	errorRoutes := `	handle_errors {
		header X-Err-Now yes
		header >X-Err-Later yes
		respond "handled {err.status_code}"
	}
`
	// What each answer carries of the site's edits.
	immediate := fieldValues{"X-Now": {"now"}, "X-Both": {"site"}, "Server": {"site-server"}}
	deferred := fieldValues{"X-Later": {"later"}, "X-Order": {"first"}, "X-Gone": nil, "X-Defer": {"deferred"}}
	none := fieldValues{"X-Later": nil, "X-Order": nil, "X-Defer": nil}
	merge := func(ms ...fieldValues) fieldValues {
		all := fieldValues{}
		for _, m := range ms {
			for k, v := range m {
				all[k] = v
			}
		}
		return all
	}
	type answer struct {
		method, path string
		status       int
		body         string
		want         fieldValues
		header       map[string]string
	}
	cases := []struct {
		name, site string
		answers    []answer
	}{
		{"bare errors", headerSite + routes, []answer{
			{"GET", "/proxy", 200, "from origin", merge(immediate, deferred, fieldValues{
				"X-Both": {"site", "origin"}, "Server": nil, "Vary": {"X-Site"}}), nil},
			{"GET", "/respond", 200, "hi", merge(immediate, deferred), nil},
			// Placeholders in an immediate edit read the request as the
			// routes reach it: before the rewrite, before basic_auth.
			{"GET", "/rw", 200, "hi", fieldValues{"X-Path": {"/rw"}, "X-Path-Later": {"/respond"}}, nil},
			{"GET", "/auth", 200, "authed", fieldValues{"X-User": {"u="}, "X-User-Later": {"u=alice"}}, basic("alice", "pw")},
			// copy_response_headers adds to the fields at once too: the
			// origin's Content-Type is there before respond answers.
			{"GET", "/copy", 200, "replaced", merge(immediate, deferred, fieldValues{
				"X-Both": {"site", "origin"}, "Content-Type": {"application/json"}}), nil},
			{"GET", "/redir", 302, "", merge(immediate, deferred, fieldValues{"Location": {"/elsewhere"}}), nil},
			{"GET", "/files/a.txt", 200, "file a", merge(immediate, deferred, fieldValues{
				"Content-Type": {"text/x-site"}, "Vary": {"X-Site", "Accept-Encoding"}}), nil},
			{"GET", "/down", 502, "", merge(immediate, none), nil},
			{"GET", "/error", 418, "", merge(immediate, none), nil},
			{"GET", "/auth", 401, "", merge(immediate, none, fieldValues{
				"WWW-Authenticate": {`Basic realm="restricted"`}, "X-User": {"u="}, "X-User-Later": nil}), nil},
		}},
		{"handle_errors", headerSite + routes + errorRoutes, []answer{
			{"GET", "/down", 502, "handled 502", merge(immediate, none, fieldValues{"X-Err-Now": {"yes"}, "X-Err-Later": {"yes"}}), nil},
			{"GET", "/error", 418, "handled 418", merge(immediate, none, fieldValues{"X-Err-Now": {"yes"}, "X-Err-Later": {"yes"}}), nil},
			{"GET", "/respond", 200, "hi", merge(immediate, deferred, fieldValues{"X-Err-Now": nil}), nil},
		}},
	}
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, tc := range cases {
			port, cls := startSite(t, backend, tc.site)
			base := fmt.Sprintf("https://localhost:%d", port)
			for proto, c := range cls {
				t.Run(tc.name+"/"+proto, func(t *testing.T) {
					for _, a := range tc.answers {
						x := exchange{method: a.method, path: a.path, header: a.header, status: a.status, body: a.body}
						if a.body == "" {
							x.body = "*" // pollproxy's own errors have a short text body
						}
						resp := x.run(t, c, base)
						a.want.check(t, a.method+" "+a.path, resp)
					}
				})
			}
		}
	})
}
