package app

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
)

// adminGuard is the one check every admin request passes before the
// admin listener's handlers see it, so that a web page the operator opens
// in a browser cannot drive the listener. It follows Caddy's admin
// endpoint (admin.go, checkHost and checkOrigin) with its option names:
//
//   - Host must name an allowed origin, on every request: a page whose
//     name was rebound to 127.0.0.1 (DNS rebinding) reaches the socket as
//     its own origin, and only its Host header gives it away.
//   - A request that carries Origin must name an allowed one, and with
//     enforce_origin every request must (Origin, or else Referer).
//   - A state change (any method but GET, HEAD and OPTIONS) must have
//     Content-Type application/json, as Caddy's /load and /config do. It
//     is not a CORS-safelisted type, so a browser sends such a request
//     cross-origin only after a preflight, and the preflight (OPTIONS)
//     is answered with CORS permission for allowed origins only. A
//     text/plain, form or typeless body, which a page can POST without
//     asking, is refused before any handler runs.
//
// Unlike Caddy, a request with Sec-Fetch-Mode and no Origin is not
// refused: that is a browser's navigation to /ab or /metrics, which reads
// and cannot change anything.
type adminGuard struct {
	allowed []*url.URL
	enforce bool
	anyHost bool // a unix socket: Host is not checked
	next    http.Handler
}

// newAdminGuard guards next on a listener at addr (its real address, port
// resolved) with the configured origins, nil for the default.
func newAdminGuard(addr net.Addr, origins []string, enforce bool, next http.Handler) *adminGuard {
	// On a unix socket, as in Caddy, Host is not checked: no name reaches
	// it, browsers cannot, and the socket's permissions say who may.
	// Origins are checked when configured.
	unix := addr.Network() == "unix"
	if origins == nil && !unix {
		origins = defaultAdminOrigins(addr)
	}
	g := &adminGuard{enforce: enforce, next: next, anyHost: unix}
	for _, o := range origins {
		if strings.Contains(o, "://") {
			u, err := url.Parse(o)
			if err != nil { // the configuration checked it
				continue
			}
			g.allowed = append(g.allowed, &url.URL{Scheme: u.Scheme, Host: u.Host})
		} else {
			g.allowed = append(g.allowed, &url.URL{Host: o})
		}
	}
	return g
}

// defaultAdminOrigins are the names a listener at addr is reached by
// without configuration: localhost, 127.0.0.1 and ::1 with its port when
// it listens on loopback or on every interface (where the loopback names
// reach it too; other names need origins), its own address otherwise.
func defaultAdminOrigins(addr net.Addr) []string {
	ap, err := netip.ParseAddrPort(addr.String())
	if err != nil {
		return []string{addr.String()}
	}
	port := fmt.Sprint(ap.Port())
	if ip := ap.Addr().Unmap(); ip.IsLoopback() || ip.IsUnspecified() {
		return []string{net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
	}
	return []string{addr.String()}
}

func (g *adminGuard) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.anyHost && !g.hostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("admin: host not allowed: %q (add it to admin { origins })", r.Host), http.StatusForbidden)
		return
	}
	named, origin := requestOrigin(r, g.enforce)
	if named != "" || g.enforce {
		if origin == nil || !g.originAllowed(origin) {
			http.Error(w, fmt.Sprintf("admin: origin not allowed: %q (add it to admin { origins })", named), http.StatusForbidden)
			return
		}
		w.Header().Set("Access-Control-Allow-Origin", origin.String())
		w.Header().Add("Vary", "Origin")
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
	case http.MethodOptions:
		// A preflight, or a client asking: what an allowed origin may send.
		w.Header().Set("Allow", "GET, HEAD, POST, OPTIONS")
		if origin != nil {
			w.Header().Set("Access-Control-Allow-Methods", "GET, HEAD, POST")
			w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
		}
		w.WriteHeader(http.StatusNoContent)
		return
	default:
		if !jsonContentType(r.Header.Values("Content-Type")) {
			http.Error(w, "admin: a change needs Content-Type: application/json (a type no web page can send without asking first)",
				http.StatusUnsupportedMediaType)
			return
		}
	}
	g.next.ServeHTTP(w, r)
}

// hostAllowed compares the Host header with the allowed origins'
// authorities, case-insensitively (RFC 3986 §3.2.2).
func (g *adminGuard) hostAllowed(host string) bool {
	for _, u := range g.allowed {
		if strings.EqualFold(host, u.Host) {
			return true
		}
	}
	return false
}

// originAllowed matches an origin's authority, and its scheme where the
// allowed origin names one.
func (g *adminGuard) originAllowed(o *url.URL) bool {
	for _, u := range g.allowed {
		if u.Scheme != "" && !strings.EqualFold(u.Scheme, o.Scheme) {
			continue
		}
		if strings.EqualFold(o.Host, u.Host) {
			return true
		}
	}
	return false
}

// requestOrigin is the origin the request names: its Origin header, or
// with referer its Referer. origin is its scheme and authority, nil when
// named is empty or does not parse as an origin ("null", a bare path).
func requestOrigin(r *http.Request, referer bool) (named string, origin *url.URL) {
	named = r.Header.Get("Origin")
	if named == "" && referer {
		named = r.Header.Get("Referer")
	}
	if named == "" {
		return "", nil
	}
	u, err := url.Parse(named)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return named, nil
	}
	return named, &url.URL{Scheme: u.Scheme, Host: u.Host}
}

// jsonContentType reports whether the request has exactly one
// Content-Type and it is application/json. Anything else is refused,
// also what a browser would preflight: the rule is the simplest one that
// leaves out every type a page can send unasked (no type,
// text/plain, application/x-www-form-urlencoded, multipart/form-data).
func jsonContentType(values []string) bool {
	if len(values) != 1 {
		return false
	}
	mt, _, err := mime.ParseMediaType(values[0])
	return err == nil && mt == "application/json"
}
