package site

import (
	"github.com/pollproxy/pollproxy/proxy/route"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Immediate header edits. Caddy's header directive without defer (and
// without a deletion, >Field or match) edits the response's header map at
// once, before the handlers after it run; whatever answers then writes
// into that map, and so does an error's answer, handle_errors' or the
// bare status. pollproxy has no map: the routes apply the immediate
// edits to the request's preset fields as they reach them (after the
// fields an error carried into the error routes, Handoff.Fields), and
// presetWriter joins those to the head when it is written, with the
// handler's own fields the way Caddy's handlers fill the map.
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
	if n != nil {
		switch n.Do.(type) {
		case *Proxy, *CopyResponse:
			return mergeAdd
		}
	}
	return mergeSet
}

// edits are the response edits a request matched, in order: the header
// directives and encodes (dirs: EditResponse and Encode), and the fields
// the immediate ones set as the routes ran (preset, after those an error
// carried in).
type edits struct {
	dirs   []Directive
	preset []stream.Field
}

// edits returns the request in progress's edits, in the handler's
// scratch: valid until the next request's evaluation (see keep).
func (h *Handler) edits() edits { return edits{dirs: h.resp, preset: h.preset} }

// keep copies e, for a request that waits (a password check, another
// exchange) while the handler serves others.
func (e edits) keep() edits {
	return edits{dirs: append([]Directive(nil), e.dirs...), preset: append([]stream.Field(nil), e.preset...)}
}

// presetBase returns the fields the error being rendered carried in, if
// any.
func presetBase(req *stream.Request) []stream.Field {
	if req.Handoff == nil {
		return nil
	}
	return req.Handoff.Fields
}

// applyImmediate applies the immediate directive n to the fields fs, as
// the routes reach it: its placeholders read the request as it is then,
// as Caddy's do (a header before basic_auth has no user yet).
func applyImmediate(fs []stream.Field, n *EditResponse, r *stream.Request) []stream.Field {
	if n.CopyFrom != nil {
		fs = n.CopyFrom.appendCopied(fs, r.Handoff)
	}
	return route.ApplyMainOps(fs, n.Ops, r)
}

// presetWriter joins the fields the immediate edits set to every head
// written through it, and carries them to the error routes (RouteError).
type presetWriter struct {
	stream.ResponseWriter
	h      *Handler
	fields []stream.Field
	inline [4]stream.Field // fields' array when they fit
	merge  byte
	wrote  bool
}

// presetFields wraps w in a presetWriter of preset (copied).
func (h *Handler) presetFields(w stream.ResponseWriter, preset []stream.Field, merge byte) stream.ResponseWriter {
	pw := &presetWriter{ResponseWriter: w, h: h, merge: merge}
	pw.fields = append(pw.inline[:0], preset...)
	return pw
}

// WriteHeader joins the handler's fields with the preset ones on a final
// head. An informational head goes as it is.
func (pw *presetWriter) WriteHeader(status int, fields []stream.Field, end bool) error {
	if status < 200 || pw.wrote {
		return pw.ResponseWriter.WriteHeader(status, fields, end)
	}
	pw.wrote = true
	fs := mergeFields(append(pw.h.fields[:0], pw.fields...), fields, pw.merge)
	pw.h.fields = fs[:0]
	return pw.ResponseWriter.WriteHeader(status, fs, end)
}

// RouteError implements stream.ErrorRouter: the error goes on to the
// error routes with the preset fields and the handler's. When they do
// not take it, the handler answers the error itself, and its fields are
// set over the preset ones, as Caddy writes an error's status into the
// header map.
func (pw *presetWriter) RouteError(status int, message string, fields []stream.Field) bool {
	fs := mergeFields(append([]stream.Field(nil), pw.fields...), fields, mergeSet)
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
		return append(route.RemoveFields(fs, func(n string) bool { return n == "server" }), fields...)
	}
	kept := route.RemoveFields(fs, func(n string) bool { return setsOver(fields, n) })
	preset := len(kept)
	for _, f := range fields {
		if keepsPreset(f.Name) && route.HasField(kept[:preset], f.Name) {
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
	return !keepsPreset(name) && name != "vary" && route.HasField(fields, name)
}
