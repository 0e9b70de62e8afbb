package app

import (
	"fmt"
	"testing"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
)

// TestURIEdits: uri path_regexp and uri query with Caddy's meanings (query
// edits in Caddy's order, the query re-encoded with sorted keys), and the
// host and path placeholders, through a real origin on every backend and
// both protocols. The origin answers with the target it received.
func TestURIEdits(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := echoOrigin(t, "o")
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle /v1/* {
		uri path_regexp ^/v1/(\w+)/(\d+)$ /items/$2/$1
		reverse_proxy %[1]s
	}
	handle /search {
		uri query {
			q>term
			+tag new
			page 1
			lang ^(\w\w)-\w\w$ $1
			-debug
		}
		reverse_proxy %[1]s
	}
	handle /one {
		uri query sort desc
		reverse_proxy %[1]s
	}
	handle /where {
		rewrite /where/{labels.0}/{path.0}
		reverse_proxy %[1]s
	}`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/v1/widget/42", status: 200, body: "o /items/42/widget"},
				{method: "GET", path: "/v1/widget/x", status: 200, body: "o /v1/widget/x"},
				{method: "GET", path: "/search?q=go&lang=en-GB&debug=1&page=9&tag=old", status: 200,
					body: "o /search?lang=en&page=1&tag=old&tag=new&term=go"},
				{method: "GET", path: "/one", status: 200, body: "o /one?sort=desc"},
				{method: "GET", path: "/where", status: 200, body: "o /where/localhost/where"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}

// TestURIEmptiedPath: a uri edit that takes the whole path leaves "/", as
// in Caddy, never an empty request target (which the origin refuses);
// strip comparisons ignore case and replace reaches the query, as Caddy's
// do.
func TestURIEmptiedPath(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		o := echoOrigin(t, "o")
		port, cls := startSite(t, backend, fmt.Sprintf(`	handle / {
		uri strip_suffix /
		reverse_proxy %[1]s
	}
	handle /only {
		uri strip_prefix /only
		reverse_proxy %[1]s
	}
	handle /gone {
		uri replace /gone ""
		reverse_proxy %[1]s
	}
	handle /rx {
		uri path_regexp ^/rx$ ""
		reverse_proxy %[1]s
	}
	handle /case/* {
		uri strip_suffix .PHP
		reverse_proxy %[1]s
	}
	handle /rq {
		uri replace foo bar
		reverse_proxy %[1]s
	}`, o))
		base := fmt.Sprintf("https://localhost:%d", port)
		for proto, c := range cls {
			for _, x := range []exchange{
				{method: "GET", path: "/", status: 200, body: "o /"},
				{method: "GET", path: "/only?x=1", status: 200, body: "o /?x=1"},
				{method: "GET", path: "/gone", status: 200, body: "o /"},
				{method: "GET", path: "/rx?a=b", status: 200, body: "o /?a=b"},
				{method: "GET", path: "/case/x.php", status: 200, body: "o /case/x"},
				{method: "GET", path: "/rq?q=foo", status: 200, body: "o /rq?q=bar"},
			} {
				t.Run(proto, func(t *testing.T) { x.run(t, c, base) })
			}
		}
	})
}
