package oracle

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// normalise removes from an answer what may differ between two servers
// that give the same answer, and nothing else. Each rule is listed in
// docs/caddyfile.md ("Caddy as the oracle") with its reason.
func normalise(a map[string]string, sticky map[string]string) {
	for k, v := range a {
		switch {
		case k == "resp set-cookie":
			a[k] = stickyValue.ReplaceAllStringFunc(v, func(m string) string {
				if s, ok := sticky[m[1:len(m)-1]]; ok {
					return "=" + s + m[len(m)-1:]
				}
				return m
			})
		case k == "resp date", k == "resp alt-svc":
			// The time; Caddy's HTTP/3 offer (pollproxy serves no HTTP/3).
			delete(a, k)
		case k == "resp server" && (v == "Caddy" || v == "pollproxy"):
			delete(a, k)
		case k == "resp via" || strings.HasSuffix(k, " via"):
			a[k] = proxyName.ReplaceAllString(v, "$1 PROXY")
		case k == "resp vary":
			// The order of Vary's values: pollproxy's header edits run
			// when the head is written, after encode's (docs/caddyfile.md,
			// Differences).
			vs := strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == '\n' || r == ' ' })
			sort.Strings(vs)
			a[k] = strings.Join(vs, ", ")
		}
	}
	if a["resp content-encoding"] != "" {
		// An encoded body is compared decoded; its length depends on the
		// encoder's framing (Caddy gives a small one a length, pollproxy
		// streams it).
		delete(a, "resp content-length")
	}
}

// deliberate removes the fields where the servers differ by design from
// both answers of one case (docs/caddyfile.md lists each with its reason).
func deliberate(c, p map[string]string) {
	for k, cv := range c {
		_, inP := p[k]
		switch {
		case strings.HasSuffix(k, " accept-encoding") && strings.HasPrefix(k, "origin") && cv == "gzip" && !inP:
			// Caddy's transport asks the origin for gzip when the client
			// did not, and decompresses the answer itself; pollproxy
			// passes the client's Accept-Encoding (none) on.
			delete(c, k)
		case strings.HasSuffix(k, " user-agent") && strings.HasPrefix(k, "origin") && strings.HasPrefix(cv, "Go-http-client/") && !inP:
			// header_up -User-Agent (or -*): Go's transport, in Caddy,
			// then sends its own name; pollproxy sends none.
			delete(c, k)
		}
	}
	// pollproxy's own errors (502, 503, 504 without handle_errors) keep
	// their short text body, where Caddy's have none.
	if st := c["status"]; st == p["status"] && (st == "502" || st == "503" || st == "504") && c["body"] == "" {
		for _, k := range []string{"body", "resp content-type", "resp content-length", "resp x-content-type-options"} {
			delete(c, k)
			delete(p, k)
		}
	}
}

var proxyName = regexp.MustCompile(`(\d\.\d) (Caddy|pollproxy)`)

// stickyValue is a cookie value as lb_policy cookie writes it, with the
// '=' before and the ';' after it.
var stickyValue = regexp.MustCompile(`=[0-9a-f]{64};`)

// difference is one field of one case where the servers disagree.
type difference struct {
	caseName, field, caddy, pollproxy string
}

func (d difference) String() string {
	return fmt.Sprintf("%s || %s: Caddy %q, pollproxy %q", d.caseName, d.field, d.caddy, d.pollproxy)
}

// compare lists the differences between Caddy's answers and pollproxy's;
// sticky is the origin's stickyValues.
func compare(caddy, pp answers, sticky map[string]string) []difference {
	var out []difference
	names := make([]string, 0, len(caddy))
	for n := range caddy {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c, p := caddy[n], pp[n]
		normalise(c, sticky)
		normalise(p, sticky)
		deliberate(c, p)
		fields := map[string]bool{}
		for f := range c {
			fields[f] = true
		}
		for f := range p {
			fields[f] = true
		}
		var fs []string
		for f := range fields {
			fs = append(fs, f)
		}
		sort.Strings(fs)
		for _, f := range fs {
			cv, cok := c[f]
			pv, pok := p[f]
			if cv != pv || cok != pok {
				if !cok {
					cv = "(none)"
				}
				if !pok {
					pv = "(none)"
				}
				out = append(out, difference{n, f, cv, pv})
			}
		}
	}
	return out
}

// glob matches s against a pattern whose * matches any run of bytes.
func glob(pattern, s string) bool {
	re := "^" + strings.ReplaceAll(regexp.QuoteMeta(pattern), `\*`, ".*") + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// pendingSeen records which entries of pending tolerated a difference.
var pendingSeen struct {
	sync.Mutex
	seen map[string]bool // by what
}

// tolerated tells whether a deliberate or pending entry covers d, and
// records the pending one.
func tolerated(d difference) bool {
	for _, p := range deliberateDifferences {
		if p.covers(d) {
			return true
		}
	}
	for _, p := range pending {
		if p.covers(d) {
			pendingSeen.Lock()
			if pendingSeen.seen == nil {
				pendingSeen.seen = map[string]bool{}
			}
			pendingSeen.seen[p.what] = true
			pendingSeen.Unlock()
			return true
		}
	}
	return false
}

func (p pendingDifference) covers(d difference) bool {
	return glob(p.caseName, d.caseName) && glob(p.field, d.field) &&
		(p.values[0] == "" || glob(p.values[0], d.caddy) && glob(p.values[1], d.pollproxy))
}
