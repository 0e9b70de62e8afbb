package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/looptest"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// wrapperRows are the directives that wrap a handler's writer, each a
// row of TestWrapperAnswers: none, encode, a response edit (deferred, so
// Caddy leaves it off an error's answer too), and a reverse_proxy's
// handle_response. The access log is the other dimension: every row
// runs on a site with and without one.
var wrapperRows = []struct {
	name, directive string
	handleResponse  bool
}{
	{name: "plain"},
	{name: "encode", directive: "encode gzip"},
	{name: "header", directive: "header >X-Edit yes"},
	{name: "handle_response", handleResponse: true},
}

// wrapperAnswers are how a request is answered, each a column: the
// origin's response, pollproxy's 502 (an origin down) and 504 (an
// origin too slow), the error directive, and copy_response.
var wrapperAnswers = []string{"origin", "502", "504", "error", "copy"}

// errorPage is handle_errors' body: past encode's minimum_length, so an
// encoder it went through would encode it.
var errorPage = strings.Repeat("error page ", 80)

// wrapperCell is the handle block of one row and answer.
func wrapperCell(row, answer, origin, closed string, handleResponse bool) string {
	passes := ""
	if handleResponse { // a handle_response no response matches
		passes = "\n\t\t\t@teapot status 418\n\t\t\thandle_response @teapot {\n\t\t\t\trespond \"teapot\"\n\t\t\t}"
	}
	proxy := func(to, block string) string {
		return fmt.Sprintf("reverse_proxy %s {%s\n\t\t}", to, block)
	}
	var a string
	switch answer {
	case "origin":
		a = proxy(origin, passes)
	case "502":
		a = proxy(closed, passes)
	case "504":
		a = proxy(origin, "\n\t\t\ttransport http {\n\t\t\t\tresponse_header_timeout 10s\n\t\t\t}"+passes)
	case "error":
		a = `error "refused" 403`
		if handleResponse {
			a = proxy(origin, "\n\t\t\t@ok status 200\n\t\t\thandle_response @ok {\n\t\t\t\terror \"refused\" 403\n\t\t\t}")
		}
	case "copy":
		a = proxy(origin, "\n\t\t\t@ok status 200\n\t\t\thandle_response @ok {\n\t\t\t\tcopy_response\n\t\t\t}")
	}
	dir := ""
	for _, r := range wrapperRows {
		if r.name == row && r.directive != "" {
			dir = "\n\t\t" + r.directive
		}
	}
	return fmt.Sprintf("\thandle /%s/%s/* {%s\n\t\t%s\n\t}\n", row, answer, dir, a)
}

// TestWrapperAnswers: every writer wrapper over every way a request is
// answered, with handle_errors on the site, as Caddy answers them: the
// status, the body (decoded when encoded), Content-Encoding, the
// response edit, and whether handle_errors ran (on 502, 504 and the
// error directive: its answer is neither encoded nor edited by the
// routes that failed). With the access log, each request has one entry
// with the status the client got. The 504 comes from the loops' clock,
// moved past response_header_timeout while the origin holds the
// request. Over HTTP/2 and HTTP/1.1 on every poller backend.
func TestWrapperAnswers(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	started := make(chan struct{}, 16)
	origin := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Path, "/504/") {
			started <- struct{}{}
			<-hold
			return
		}
		w.Header().Set("X-Origin", "yes")
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(encodePage)
	}))
	closed := fmt.Sprintf("127.0.0.1:%d", servertest.FreePort(t))
	var cells strings.Builder
	for _, r := range wrapperRows {
		for _, a := range wrapperAnswers {
			cells.WriteString(wrapperCell(r.name, a, origin, closed, r.handleResponse))
		}
	}
	cells.WriteString("\thandle_errors {\n\t\theader X-Handled yes\n\t\trespond \"handled {err.status_code} " + errorPage + "\"\n\t}")

	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		for _, logged := range []bool{false, true} {
			name, site, logFile := "unlogged", cells.String(), ""
			if logged {
				logFile = filepath.Join(t.TempDir(), "access.log")
				name, site = "logged", fmt.Sprintf("\tlog {\n\t\toutput file %s\n\t\tformat json\n\t}\n%s", logFile, site)
			}
			t.Run(name, func(t *testing.T) {
				port, cls, r := startSiteLogged(t, backend, site)
				clock := looptest.NewClock(r.in.group.Loops()...)
				base := fmt.Sprintf("https://localhost:%d", port)
				var want []string // the access log's entries: uri status
				for proto, c := range cls {
					for _, row := range wrapperRows {
						for _, a := range wrapperAnswers {
							path := fmt.Sprintf("/%s/%s/x", row.name, a)
							t.Run(proto+path, func(t *testing.T) {
								x := wrapperWant(row.name, a)
								x.path, x.header = path, map[string]string{"Accept-Encoding": "gzip"}
								if a != "504" {
									x.run(t, c, base)
								} else {
									done := make(chan struct{})
									go func() {
										defer close(done)
										x.run(t, c, base)
									}()
									select {
									case <-started:
									case <-done:
										t.Fatal("answered before the origin had the request")
									}
									clock.Advance(10*time.Second + time.Millisecond)
									<-done
								}
								want = append(want, fmt.Sprintf("%s %d", path, x.status))
							})
						}
					}
				}
				if logged {
					wrapperLog(t, logFile, want)
				}
			})
		}
	})
}

// wrapperWant is what the client gets from row's answer a.
func wrapperWant(row, a string) encodeCase {
	x := encodeCase{name: row + " " + a, status: 200, body: encodePage, want: map[string]string{
		"X-Origin": "yes", "X-Handled": "", "X-Edit": ""}}
	switch a {
	case "502", "504", "error":
		x.status = map[string]int{"502": 502, "504": 504, "error": 403}[a]
		x.body = []byte(fmt.Sprintf("handled %d %s", x.status, errorPage))
		x.want["X-Origin"], x.want["X-Handled"] = "", "yes"
		return x
	}
	switch row {
	case "encode":
		x.encoding = "gzip"
	case "header":
		x.want["X-Edit"] = "yes"
	}
	return x
}

// wrapperLog checks the access log has one entry for each of want (uri
// status), in any order.
func wrapperLog(t *testing.T, logFile string, want []string) {
	t.Helper()
	var got []string
	for _, line := range awaitLines(t, logFile, len(want)) {
		var e struct {
			Request struct {
				URI string `json:"uri"`
			} `json:"request"`
			Status int `json:"status"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("access log entry %s: %v", line, err)
		}
		got = append(got, fmt.Sprintf("%s %d", e.Request.URI, e.Status))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("access log entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestReplacedLoggedOnce: a response other routes replace (an intercept
// over a reverse_proxy behind encode, forward_auth's 2xx) gives one
// access log entry, the answer the client got, as in Caddy.
func TestReplacedLoggedOnce(t *testing.T) {
	origin := servertest.Origin(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/auth" {
			w.WriteHeader(404)
		}
		w.Write(encodePage)
	}))
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		logFile := filepath.Join(t.TempDir(), "access.log")
		port, cls := startSite(t, backend, fmt.Sprintf(`	log {
		output file %[1]s
		format json
	}
	encode gzip
	handle /icpt/* {
		intercept {
			@nf status 404
			handle_response @nf {
				respond "intercepted" 410
			}
		}
		reverse_proxy %[2]s
	}
	handle /fa/* {
		forward_auth %[2]s {
			uri /auth
		}
		respond "let in"
	}`, logFile, origin))
		base := fmt.Sprintf("https://localhost:%d", port)
		var want []string
		for _, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/icpt/x", status: 410, body: "intercepted"},
				{method: "GET", path: "/fa/x", status: 200, body: "let in"},
			} {
				x.run(t, c, base)
				want = append(want, fmt.Sprintf("%s %d", x.path, x.status))
			}
		}
		wrapperLog(t, logFile, want)
	})
}
