package stream

// Unwrapper is implemented by a ResponseWriter that wraps another (a
// handler's writer that edits the head, encodes the body, logs what goes
// out), as net/http's Unwrap does for http.ResponseController. Unwrap
// returns the writer it writes to, or nil when there is none any more (a
// wrapper its request let go of).
type Unwrapper interface {
	Unwrap() ResponseWriter
}

// Unwrap returns the writer w wraps, or nil when w wraps none.
func Unwrap(w ResponseWriter) ResponseWriter {
	if u, ok := w.(Unwrapper); ok {
		return u.Unwrap()
	}
	return nil
}

// Find walks w's Unwrap chain, w first, and returns the first writer
// that implements T: the one whose method an optional interface's call
// reaches. It reports false when none does.
func Find[T any](w ResponseWriter) (T, bool) {
	for w != nil {
		if x, ok := w.(T); ok {
			return x, true
		}
		w = Unwrap(w)
	}
	var zero T
	return zero, false
}

// RouteError offers the error response status with message to the
// site's error routes (ErrorRouter) through w's chain. It reports true
// when they took the stream over; false when no writer in the chain
// routes errors, or the one that does refused.
func RouteError(w ResponseWriter, status int, message string) bool {
	return RouteErrorFields(w, status, message, nil)
}

// RouteErrorFields is RouteError for a handler that had set response
// fields before it failed (file_server's Allow on a 405): they go on to
// the error routes' answer, as the fields Caddy's handlers set stay in
// the response header map its error routes write.
func RouteErrorFields(w ResponseWriter, status int, message string, fields []Field) bool {
	r, ok := Find[ErrorRouter](w)
	return ok && r.RouteError(status, message, fields)
}

// RefuseBody tells the first writer in w's chain that wants to know
// (BodyRefuser) that the handler reads no more of the request body.
func RefuseBody(w ResponseWriter) {
	if r, ok := Find[BodyRefuser](w); ok {
		r.RefuseBody()
	}
}

// Flush lets the first writer in w's chain that holds body bytes back
// (Flusher) send what it holds.
func Flush(w ResponseWriter) {
	if f, ok := Find[Flusher](w); ok {
		f.Flush()
	}
}

// Replacer is implemented by a ResponseWriter that can take a handler's
// response away from the client and have other routes answer in its
// place (handle_response, intercept, forward_auth's 2xx). Replaced
// reports whether it did so. A request is reported once, as Caddy logs
// it, by the answer the client got: a handler whose response was
// replaced leaves it to that answer.
type Replacer interface {
	Replaced() bool
}

// Replaced reports whether the first Replacer in w's chain took the
// response of the handler writing to w.
func Replaced(w ResponseWriter) bool {
	r, ok := Find[Replacer](w)
	return ok && r.Replaced()
}

// ConnCloser is implemented by a front end's ResponseWriter that can
// close the client connection once the response in progress is done
// (Caddy's respond ... close): HTTP/1.1 says "connection: close" in the
// head and closes after the body; HTTP/2 starts a graceful shutdown, a
// GOAWAY, as Go's server does for a handler's "Connection: close".
type ConnCloser interface {
	CloseConnection()
}

// CloseConnection asks the first writer in w's chain that can
// (ConnCloser) to close the client connection after this response.
func CloseConnection(w ResponseWriter) {
	if c, ok := Find[ConnCloser](w); ok {
		c.CloseConnection()
	}
}
