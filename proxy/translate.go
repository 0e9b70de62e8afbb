package proxy

import (
	"net/netip"
	"strings"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/h1"
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// This file is the h2→h1 translation (DESIGN.md, non-negotiable 5): the
// one place that builds the HTTP/1.1 request head an origin receives, and
// applies header_down edits to the response. Which fields are dropped,
// replaced or appended is proxy/field's table; the front ends have
// already refused or removed what they own.

// requestHead builds the origin's request head for req: the request line,
// the translated fields (requestFields) and the body framing, re-chosen
// here (bodyLength) so the origin never sees framing a client wrote.
// chunked reports chunked framing. The head is appended to dst, a recycled
// exchange's buffer when it has one.
func (h *Handler) requestHead(dst []byte, req *stream.Request, method string, trusted bool) (head []byte, chunked bool) {
	length := bodyLength(req, method)
	chunked = length == h1.LengthChunked
	if dst == nil {
		dst = make([]byte, 0, headCap)
	}
	head = h1.AppendRequestHeadFramed(dst, method, originTarget(h.upstreamTarget(req)), h.requestFields(req, trusted), length)
	return head, chunked
}

// upstreamMethod is the method the origin's request has: the request's,
// or reverse_proxy's method.
func (h *Handler) upstreamMethod(req *stream.Request) string {
	if h.cfg.Method == nil {
		return req.Method
	}
	m := strings.ToUpper(h.cfg.Method.Expand(req))
	if m == "" {
		return "GET" // as Go's transport sends an empty method
	}
	return m
}

// dropsBody reports whether the origin's request goes without the
// client's body: Caddy drops it when its rewrite changed the request and
// the method configured is written GET or HEAD.
func (h *Handler) dropsBody(req *stream.Request, method string) bool {
	if h.cfg.Method == nil {
		return false
	}
	if m, ok := h.cfg.Method.Literal(); !ok || m != "GET" && m != "HEAD" {
		return false
	}
	return method != req.Method || h.upstreamTarget(req) != req.Path
}

// withoutBody is a copy of req for an origin's request that goes without
// the client's body: no body, and no content-length field an HTTP/2
// client sent.
func withoutBody(req *stream.Request) *stream.Request {
	c := *req
	c.HasBody, c.ContentLength = false, 0
	c.Header = make([]stream.Field, 0, len(req.Header))
	for _, f := range req.Header {
		if f.Name != "content-length" {
			c.Header = append(c.Header, f)
		}
	}
	return &c
}

// upstreamTarget is the target the origin's request has: the request's,
// or reverse_proxy's rewrite of it.
func (h *Handler) upstreamTarget(req *stream.Request) string {
	if h.cfg.Rewrite != nil {
		if to := route.RewriteTarget(*h.cfg.Rewrite, "", req); to != "" {
			return to
		}
	}
	return req.Path
}

// bodyLength is the framing the origin gets, as net/http's Transport
// chooses it for the request Caddy forwards: Content-Length when the
// length is known and not 0, chunked when a body of unknown length
// follows, and for an empty body (none, or a declared length of 0)
// "Content-Length: 0" for POST, PUT and PATCH only, which servers expect
// there, and no framing field for any other method.
func bodyLength(req *stream.Request, method string) int64 {
	switch {
	case req.HasBody && req.ContentLength > 0:
		return req.ContentLength
	case req.HasBody && req.ContentLength < 0:
		return h1.LengthChunked
	}
	switch method {
	case "POST", "PUT", "PATCH":
		return 0
	}
	return h1.LengthNone
}

// originTarget is the request target as the origin receives it: a path
// that edits emptied (uri replace of the whole path, a path_regexp that matched
// it all) is "/", as net/http writes a URL with an empty path, so an
// origin never gets an empty request target, which HTTP/1.1 forbids.
func originTarget(target string) string {
	if target == "" || target[0] == '?' {
		return "/" + target
	}
	return target
}

// headCap is the first guess at a translated request head's size: most
// fit, so building one costs a single allocation, and none once the
// exchange is recycled with its buffer.
const headCap = 1024

// requestFields translates the client's fields for the origin: Host from
// :authority; pollproxy's Via after the client's, as a field line of its
// own as Caddy writes it (field.AppendedByProxy); X-Forwarded-For,
// -Proto and -Host as Caddy writes them (forwardedFields); hop-by-hop
// fields dropped (field.NotToOrigin), even though the front ends already
// removed or refused them; fields whose names hold '_' or '.' dropped
// (field.CGIAlias), as Caddy drops them from every request; TE reduced to
// "trailers" when it lists it; and anything that could not
// be written safely dropped. header_up edits apply last; an upstream
// placeholder in one leaves a mark that attach fills for each upstream
// tried.
func (h *Handler) requestFields(req *stream.Request, trusted bool) []stream.Field {
	fs := h.fields[:0]
	fs = append(fs, stream.Field{Name: "host", Value: req.Authority})
	peer := h.clientIP(req.RemoteAddr.Addr())
	via := "1.1 pollproxy" // the client's version, as Caddy's Via names it
	switch req.Proto {
	case "HTTP/2.0":
		via = "2.0 pollproxy"
	case "HTTP/1.0":
		via = "1.0 pollproxy"
	}
	xff, proto, host := "", "", ""
	// TE is the one hop-by-hop field Caddy passes on, reduced to
	// "trailers" when it lists it (both front ends keep it in Hop), so an
	// application that sends trailers only to those who accept them does.
	te := field.HasToken(req.Hop, "te", "trailers")
	for _, f := range req.Header {
		if trusted { // a trusted proxy's own X-Forwarded-* are kept
			switch f.Name {
			case "x-forwarded-for":
				xff = joinList(xff, f.Value)
				continue
			case "x-forwarded-proto":
				proto = f.Value
				continue
			case "x-forwarded-host":
				host = f.Value
				continue
			}
		}
		switch r := field.Lookup(f.Name); {
		case r.Has(field.NotToOrigin), field.CGIAlias(f.Name):
			continue
		case r.Has(field.AppendedByProxy) && f.Name != "via":
			continue // x-forwarded-for from an untrusted peer: replaced
		}
		if field.ValidName(f.Name) && field.ValidValue(f.Value) {
			fs = append(fs, f)
		}
	}
	if te {
		fs = append(fs, stream.Field{Name: "te", Value: "trailers"})
	}
	fs = h.forwardedFields(fs, req, peer, xff, proto, host)
	fs = append(fs, stream.Field{Name: "via", Value: via})
	if len(h.cfg.HeaderUp) > 0 {
		fs = keepHost(route.ApplyHeaderOps(fs, h.cfg.HeaderUp, req))
	}
	h.fields = fs[:0]
	return fs
}

// keepHost gives the origin a Host when header_up edits removed it
// ("header_up -*", "header_up -Host") or left it empty: HTTP/1.1 requires
// one. Caddy's transport then writes the upstream's address, as
// RequestHostMark does once the upstream is picked.
func keepHost(fs []stream.Field) []stream.Field {
	for i, f := range fs {
		if f.Name == "host" {
			if f.Value == "" {
				fs[i].Value = route.RequestHostMark
			}
			return fs
		}
	}
	fs = append(fs, stream.Field{})
	copy(fs[1:], fs)
	fs[0] = stream.Field{Name: "host", Value: route.RequestHostMark}
	return fs
}

// forwardedFields appends X-Forwarded-For, -Proto and -Host as Caddy
// writes them. From a peer that is not a trusted proxy, the client's own
// copies were dropped, so the origin sees the peer's address, the scheme
// and the authority pollproxy verified: a client cannot forge its address
// to an origin that believes the first entry. From a trusted proxy, its
// X-Forwarded-For is kept with the peer appended, and its -Proto and -Host
// are kept when valid.
func (h *Handler) forwardedFields(fs []stream.Field, req *stream.Request, peer, xff, proto, host string) []stream.Field {
	if xff != "" && field.ValidValue(xff) {
		xff += ", " + peer
	} else {
		xff = peer
	}
	if proto == "" || !field.ValidValue(proto) {
		proto = req.Scheme
	}
	if host == "" || !field.ValidValue(host) {
		host = req.Authority
	}
	return append(fs,
		stream.Field{Name: "x-forwarded-for", Value: xff},
		stream.Field{Name: "x-forwarded-proto", Value: proto},
		stream.Field{Name: "x-forwarded-host", Value: host},
	)
}

// joinList joins two comma-separated field values: several field lines
// with one name are one list (RFC 9110 §5.3).
func joinList(a, b string) string {
	if a == "" {
		return b
	}
	return a + ", " + b
}

// clientIP formats a peer address, remembering the last one: a
// connection's requests come in runs from one address.
func (h *Handler) clientIP(a netip.Addr) string {
	a = a.Unmap()
	if a != h.lastIP || h.lastIPText == "" {
		h.lastIP, h.lastIPText = a, a.String()
	}
	return h.lastIPText
}

// responseFields applies header_down edits to a response head.
func (h *Handler) responseFields(fs []stream.Field) []stream.Field {
	if len(h.cfg.HeaderDown) == 0 {
		return fs
	}
	return route.ApplyHeaderOps(fs, h.cfg.HeaderDown, nil)
}

// responseVia adds pollproxy's Via to a proxied response (after header_down,
// so header_down never removes it) as Caddy adds its own: value names the
// version of the origin's response ("1.1 pollproxy"), before any Via
// fields the origin sent. The product token is pollproxy's, as in the Via
// of the request (docs/caddyfile.md).
func responseVia(fs []stream.Field, value string) []stream.Field {
	via := stream.Field{Name: "via", Value: value}
	i := 0
	for i < len(fs) && fs[i].Name != "via" {
		i++
	}
	if i == len(fs) {
		return append(fs, via)
	}
	// A new array: fs may be the parser's, which must keep its fields.
	out := make([]stream.Field, 0, len(fs)+1)
	return append(append(append(out, fs[:i]...), via), fs[i:]...)
}
