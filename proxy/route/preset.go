package route

import "github.com/pollproxy/pollproxy/proxy/stream"

// Immediate header edits. Caddy's header directive without defer (and
// without a deletion, >Field or match) edits the response's header map at
// once, before the handlers after it run; whatever answers then writes
// into that map, and so does an error's answer, handle_errors' or the
// bare status. pollproxy has no map: presetWriter holds the immediate
// edits, and the fields an error carried into the error routes
// (Handoff.Fields), and applies them when the head is written, joined
// with the handler's own fields the way Caddy's handlers fill the map.
// It is the innermost writer, so the deferred edits and encoders around
// it see the joined fields, as Caddy's wrappers see the map.

// How a handler's fields join the preset ones.
const (
	// mergeSet: the handler sets its fields over the preset ones (respond,
	// redir, file_server, error answers), but leaves a preset Content-Type
	// or ETag as it is and adds its Vary, as Caddy's static responses and
	// file server do.
	mergeSet byte = iota
	// mergeAdd: an origin's response (reverse_proxy, copy_response): its
	// fields are added to the preset ones, whose Server goes, as Caddy's
	// reverse proxy copies the origin's header.
	mergeAdd
)

// mergeFor is how the answer of the terminal route n joins the preset
// fields.
func mergeFor(n *Node) byte {
	if n != nil && (n.Kind == Proxy || n.Kind == CopyResponse) {
		return mergeAdd
	}
	return mergeSet
}

// immediate reports whether resp has an immediate header directive.
func immediate(resp []*Node) bool {
	for _, n := range resp {
		if n.Kind == EditResponse && n.Immediate {
			return true
		}
	}
	return false
}

// presetBase returns the fields the error being rendered carried in, if
// any.
func presetBase(req *stream.Request) []stream.Field {
	if req.Handoff == nil || len(req.Handoff.Fields) == 0 {
		return nil
	}
	return req.Handoff.Fields
}

// presetWriter applies the immediate edits to every head written
// through it, and carries them to the error routes (RouteError).
type presetWriter struct {
	stream.ResponseWriter
	h     *Handler
	ops   [4]*Node // the immediate directives, in order
	more  []*Node  // instead of ops when they do not fit
	n     int
	base  []stream.Field
	merge byte
	req   stream.Request // the request's scalars, for placeholders
	wrote bool
}

func (h *Handler) preset(w stream.ResponseWriter, req *stream.Request, resp []*Node, base []stream.Field, merge byte) stream.ResponseWriter {
	pw := &presetWriter{ResponseWriter: w, h: h, base: base, merge: merge}
	for _, n := range resp {
		if n.Kind != EditResponse || !n.Immediate {
			continue
		}
		switch {
		case pw.more != nil:
			pw.more = append(pw.more, n)
		case pw.n == len(pw.ops):
			pw.more = append(append(make([]*Node, 0, 2*len(pw.ops)), pw.ops[:]...), n)
		default:
			pw.ops[pw.n] = n
		}
		pw.n++
	}
	pw.req = *req
	pw.req.Header = nil
	return pw
}

// nodes returns the immediate directives, in order.
func (pw *presetWriter) nodes() []*Node {
	if pw.more != nil {
		return pw.more
	}
	return pw.ops[:pw.n]
}

// fields appends the preset fields to dst: the error's, then the
// immediate edits over them in order.
func (pw *presetWriter) fields(dst []stream.Field) []stream.Field {
	dst = append(dst, pw.base...)
	for _, n := range pw.nodes() {
		if n.CopyFrom != nil {
			dst = n.CopyFrom.appendCopied(dst, pw.req.Handoff)
		}
		dst = applyOps(dst, n.Ops, &pw.req, mainOps)
	}
	return dst
}

// WriteHeader joins the handler's fields with the preset ones on a final
// head. An informational head goes as it is.
func (pw *presetWriter) WriteHeader(status int, fields []stream.Field, end bool) error {
	if status < 200 || pw.wrote {
		return pw.ResponseWriter.WriteHeader(status, fields, end)
	}
	pw.wrote = true
	fs := mergeFields(pw.fields(pw.h.fields[:0]), fields, pw.merge)
	pw.h.fields = fs[:0]
	return pw.ResponseWriter.WriteHeader(status, fs, end)
}

// RouteError implements stream.ErrorRouter: the error goes on to the
// error routes with the preset fields and the handler's. When they do
// not take it, the handler answers the error itself, and its fields are
// set over the preset ones, as Caddy writes an error's status into the
// header map.
func (pw *presetWriter) RouteError(status int, message string, fields []stream.Field) bool {
	fs := mergeFields(pw.fields(nil), fields, mergeSet)
	if stream.RouteErrorFields(pw.ResponseWriter, status, message, fs) {
		return true
	}
	pw.merge = mergeSet
	return false
}

// Unwrap implements stream.Unwrapper.
func (pw *presetWriter) Unwrap() stream.ResponseWriter { return pw.ResponseWriter }

var (
	_ stream.Unwrapper   = (*presetWriter)(nil)
	_ stream.ErrorRouter = (*presetWriter)(nil)
)

// mergeFields joins a handler's fields to the preset ones fs, in fs's
// array, as merge says.
func mergeFields(fs, fields []stream.Field, merge byte) []stream.Field {
	if merge == mergeAdd {
		kept := fs[:0]
		for _, f := range fs {
			if f.Name != "server" {
				kept = append(kept, f)
			}
		}
		return append(kept, fields...)
	}
	kept := fs[:0]
	for _, f := range fs {
		if !setsOver(fields, f.Name) {
			kept = append(kept, f)
		}
	}
	preset := len(kept)
	for _, f := range fields {
		if keepsPreset(f.Name) && has(kept[:preset], f.Name) {
			continue
		}
		kept = append(kept, f)
	}
	return kept
}

// keepsPreset reports whether a handler that sets its fields leaves a
// preset field of that name as it is: Caddy's static responses and file
// server write a Content-Type only where none is set, and its file server
// takes a set ETag for the file's.
func keepsPreset(name string) bool { return name == "content-type" || name == "etag" }

// setsOver reports whether a handler's fields replace a preset field
// name: those it has, but the ones it keeps and Vary, which Caddy's file
// server adds to.
func setsOver(fields []stream.Field, name string) bool {
	return !keepsPreset(name) && name != "vary" && has(fields, name)
}
