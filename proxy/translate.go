package proxy

import (
	"net/netip"

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
// here (Content-Length when the length is known, chunked otherwise) so the
// origin never sees framing a client wrote. chunked reports the latter.
func (h *Handler) requestHead(req *stream.Request) (head []byte, chunked bool) {
	length := h1.LengthNone
	switch {
	case req.ContentLength >= 0:
		length = req.ContentLength
	case req.HasBody:
		length, chunked = h1.LengthChunked, true
	}
	head = h1.AppendRequestHeadFramed(make([]byte, 0, headCap), req.Method, req.Path, h.requestFields(req), length)
	return head, chunked
}

// headCap is the first guess at a translated request head's size: most
// fit, so building one costs a single allocation.
const headCap = 1024

// requestFields translates the client's fields for the origin: Host from
// :authority; X-Forwarded-For and Via appended to (field.AppendedByProxy);
// X-Forwarded-Proto and -Host written; hop-by-hop fields and the client's
// own copies of what is written here dropped (field.NotToOrigin), even
// though the front ends already removed or refused the hop-by-hop ones;
// and anything that could not be written safely dropped. header_up edits
// apply last.
func (h *Handler) requestFields(req *stream.Request) []stream.Field {
	fs := h.fields[:0]
	fs = append(fs, stream.Field{Name: "host", Value: req.Authority})
	client := h.clientIP(req.RemoteAddr.Addr())
	xff, via := client, "1.1 pollproxy"
	if req.Proto == "HTTP/2.0" {
		via = "2.0 pollproxy"
	}
	for _, f := range req.Header {
		switch r := field.Lookup(f.Name); {
		case r.Has(field.NotToOrigin):
			continue
		case r.Has(field.AppendedByProxy):
			if f.Name == "via" {
				via = f.Value + ", " + via
			} else { // x-forwarded-for: the last one the client sent
				xff = f.Value + ", " + client
			}
			continue
		}
		if field.ValidName(f.Name) && field.ValidValue(f.Value) {
			fs = append(fs, f)
		}
	}
	fs = append(fs,
		stream.Field{Name: "x-forwarded-for", Value: xff},
		stream.Field{Name: "x-forwarded-proto", Value: req.Scheme},
		stream.Field{Name: "x-forwarded-host", Value: req.Authority},
		stream.Field{Name: "via", Value: via},
	)
	fs = route.ApplyHeaderOps(fs, h.cfg.HeaderUp, req)
	h.fields = fs[:0]
	return fs
}

// clientIP formats a client address, remembering the last one: a
// connection's requests come in runs from one address.
func (h *Handler) clientIP(a netip.Addr) string {
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
