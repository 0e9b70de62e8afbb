package site

import (
	"strings"

	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// CopyField is one of forward_auth's copy_headers: the auth answer's
// field From, put on the request as To (both lower case).
type CopyField struct {
	From, To string
}

// forwardAuth starts forward_auth's subrequest, Caddy's expansion of it:
// the request's head with method GET, target uri, X-Forwarded-Method and
// X-Forwarded-Uri set to the request's, and no body, to the auth
// service's reverse proxy on this loop. The request waits in a relay,
// its body held for the app, until the answer's head.
func (h *Handler) forwardAuth(n *ForwardAuth, at *resumePoint, resp edits, req *stream.Request, w stream.ResponseWriter) stream.Events {
	r := &relay{hold: hold{w: w}, h: h, req: req, responses: n.Responses, copy: n.Copy, at: at, auth: true}
	// The auth service's answer, when it is the client's, goes through
	// the response edits and encodes matched before, as a proxied one.
	var one [1]eventer
	cw, encs := h.edit(w, req, resp, mergeAdd, one[:0])
	r.cw = cw
	sub := &r.sub
	*sub = *req
	sub.Method, sub.HasBody, sub.ContentLength, sub.Upgrade = "GET", false, -1, ""
	if to := route.RewriteTarget(n.URI, "", req); to != "" {
		sub.Path = to
	}
	fs := make([]stream.Field, 0, len(req.Header)+2)
	for _, fl := range req.Header {
		switch fl.Name {
		case "x-forwarded-method", "x-forwarded-uri", "content-length", "expect":
			continue // set below, or about a body the auth service never gets
		}
		fs = append(fs, fl)
	}
	sub.Header = append(fs, stream.Field{Name: "x-forwarded-method", Value: req.Method},
		stream.Field{Name: "x-forwarded-uri", Value: req.Path})
	r.origin = h.proxies[n.Proxy].Serve(sub, (*relayReply)(r))
	return encoded(r, encs)
}

// copyFields puts copy_headers' fields of the auth answer on the request.
// A field named there is removed from the request first, as Caddy does,
// so a client cannot send it when the auth service does not.
func (r *relay) copyFields(answer []stream.Field) {
	q := r.req
	fs := make([]stream.Field, 0, len(q.Header)+len(r.copy))
	for _, fl := range q.Header {
		if !copiedTo(r.copy, fl.Name) {
			fs = append(fs, fl)
		}
	}
	for _, c := range r.copy {
		v := ""
		for _, a := range answer {
			if a.Name == c.From && a.Value != "" {
				v = joinValue(v, a.Value)
			}
		}
		if v != "" {
			fs = append(fs, stream.Field{Name: c.To, Value: v})
		}
	}
	q.Header = fs
}

func copiedTo(cs []CopyField, name string) bool {
	for _, c := range cs {
		if c.To == name {
			return true
		}
	}
	return false
}

// joinValue joins a field's values as Caddy's {http.reverse_proxy.header.*}
// does: with commas.
func joinValue(v, more string) string {
	if v == "" {
		return more
	}
	return v + "," + more
}

// ParseCopyField reads one copy_headers argument: Name, or From>To to
// rename it on the way.
func ParseCopyField(arg string) (CopyField, bool) {
	from, to, ok := strings.Cut(arg, ">")
	if !ok {
		to = from
	}
	c := CopyField{From: strings.ToLower(from), To: strings.ToLower(to)}
	return c, c.From != "" && c.To != ""
}
