package stream

import (
	"crypto/x509"
	"errors"
	"net/netip"
	"strconv"
	"time"
)

// Errors a ResponseWriter returns on either front end, so a handler can
// tell them apart without knowing which protocol it answers.
var (
	// ErrStreamClosed: the exchange is over (completed, reset or aborted)
	// or its connection is gone.
	ErrStreamClosed = errors.New("stream closed")
	// ErrHeadWritten: WriteHeader after the final head.
	ErrHeadWritten = errors.New("final response head already written")
	// ErrNoHead: Write or Close before the final head.
	ErrNoHead = errors.New("no final response head written")
	// ErrBadStatus: a status outside 100–599, 101 on a request that asked
	// for no upgrade (or on h2, which has no 101), or an informational
	// status that would end the stream.
	ErrBadStatus = errors.New("invalid response status")
)

// Field is one header or trailer field. Names are lowercase on both sides of
// the contract; front ends validate them before a handler sees them.
type Field struct {
	Name  string
	Value string
}

// Request is a validated request head.
type Request struct {
	Method string
	// Scheme is "https" for requests that arrived over TLS, "http" otherwise.
	Scheme string
	// Authority is :authority (h2) or Host (h1), never empty for HTTP/1.1.
	Authority string
	// Path is the request target: origin-form ("/a?b"), "*" for OPTIONS.
	Path string
	// Header holds the regular fields in arrival order: no pseudo-headers,
	// no connection-specific fields, no Host (see Authority).
	Header []Field
	// Hop holds the hop-by-hop fields the HTTP/1.1 front end removed from
	// Header (Connection, Keep-Alive, Proxy-Connection, Upgrade, TE and
	// the fields Connection names), in arrival order: placeholders and
	// header matchers see them, as Caddy's do; nothing forwards them.
	Hop []Field
	// ContentLength is the declared body length, or -1 when unknown
	// (h2 without content-length, h1 chunked).
	ContentLength int64
	// HasBody is false when the request ended with its head.
	HasBody bool
	// Proto is "HTTP/2.0", "HTTP/1.1" or "HTTP/1.0".
	Proto string
	// RemoteAddr is the client's address.
	RemoteAddr netip.AddrPort
	// Upgrade is the protocol the client asks to switch to, or empty: the
	// Upgrade field of an HTTP/1.1 request that also lists "upgrade" in
	// Connection (GET without a body), or :protocol of an h2 extended
	// CONNECT (RFC 8441, Method "CONNECT"). Such a request may become a
	// tunnel (see the package doc).
	Upgrade string
	// AuthUser is the user a basic_auth directive authenticated: Caddy's
	// {http.auth.user.id}. Front ends leave it empty; routing sets it.
	AuthUser string
	// ClientIP is the client's address as the listener's trusted_proxies
	// derive it (the peer's unless a trusted proxy names another): Caddy's
	// {client_ip}. Front ends leave it unset; routing and the proxy set it.
	ClientIP netip.Addr
	// Captures are what the regexp matchers that matched this request
	// saved, oldest first: Caddy's {re.NAME.N} placeholders. Front ends
	// leave it empty; routing appends.
	Captures []Capture
	// MaxBodySize bounds the request body a handler reads (Caddy's
	// request_body max_size): a reverse proxy answers 413 when the body is
	// longer and forwards no byte past it. 0: no bound. Routing sets it.
	MaxBodySize int64
	// LogSkip leaves the request out of the access log (Caddy's log_skip),
	// not out of the metrics. Routing sets it.
	LogSkip bool
	// TLS is the connection's TLS, for access logs (Caddy's request.tls);
	// nil over cleartext. Shared by the connection's requests, read-only.
	TLS *TLSState
	// OriginalPath is Path as the client sent it, before routing rewrote
	// it: the access log's uri, as Caddy logs it. Routing sets it; ""
	// means Path was not rewritten.
	OriginalPath string
	// Root is the document root the routes set (Caddy's
	// {http.vars.root}), and FileRemainder what a file matcher's
	// split_path left after the script ({http.matchers.file.remainder}),
	// for a FastCGI environment. Routing sets them.
	Root          string
	FileRemainder string
	// Handoff is what a response that routes hands the routes the request
	// re-enters: the error handle_errors renders, or the origin response
	// handle_response matched. Front ends leave it nil; routing sets it.
	Handoff *Handoff
	// OriginalMethod is Method as the client sent it, before routing
	// changed it ({http.request.orig_method}). Routing sets it.
	OriginalMethod string
	// Start is when routing began on the request, on the loop's clock:
	// Caddy's {http.request.duration} counts from it. Routing sets it.
	Start time.Time
	// UUID is the request's identifier once {http.request.uuid} made one;
	// later reads give the same. Routing sets it.
	UUID string
	// File is what the last file matcher that matched found: Caddy's
	// {http.matchers.file.*}; nil when none did. Routing sets it.
	File *FileMatch
	// Vars are the variables the routes set (Caddy's vars directive and
	// {http.vars.*}), one per name. Routing sets them.
	Vars []Var
	// Mapped are the map directives the routes passed, oldest first: each
	// fills the placeholders it names when one is read, as Caddy's map
	// does. Routing appends.
	Mapped []Mapper
	// Shutdown is the stop the process has scheduled, if any ({http.shutting_down},
	// {http.time_until_shutdown}); nil reads as none. Routing sets it.
	Shutdown *Shutdown
	// Conn is the client connection the request arrived on, for the
	// loop's panic containment: a handler whose own work for the request
	// panics (relaying an origin's answer, from the origin connection's
	// event) abandons it, since that work may have left the connection
	// half-updated. Front ends set it; nil when the transport has none.
	Conn Abandoner
}

// FileMatch is a file a file matcher found: its path from the root (with
// a leading slash, and a trailing one for a directory), its path on the
// disk, and its type ("file" or "directory").
type FileMatch struct {
	Relative, Absolute, Type string
}

// LocalAddresser is a client connection (Request.Conn) that knows the
// address the client connected to: Caddy's {http.request.local}.
type LocalAddresser interface {
	LocalAddr() netip.AddrPort
}

// Var is one variable the routes set on a request.
type Var struct {
	Name, Value string
}

// Var returns the value of the variable name and whether it is set.
func (r *Request) Var(name string) (string, bool) {
	for i := range r.Vars {
		if r.Vars[i].Name == name {
			return r.Vars[i].Value, true
		}
	}
	return "", false
}

// SetVar sets the variable name to value, replacing its old value.
func (r *Request) SetVar(name, value string) {
	for i := range r.Vars {
		if r.Vars[i].Name == name {
			r.Vars[i].Value = value
			return
		}
	}
	r.Vars = append(r.Vars, Var{Name: name, Value: value})
}

// Mapper fills placeholders a route defined for the request (Caddy's map
// directive): it is asked when one is read, so it sees the request as it
// is then.
type Mapper interface {
	// AppendMapped appends the value of the placeholder name to dst;
	// defines is false when the mapper does not define name.
	AppendMapped(dst []byte, name string, r *Request) (out []byte, defines bool)
}

// Abandoner is a client connection that can be discarded whole after a
// panic in work done for it: its streams reset, its socket closed, its
// handlers told (OnAbort). It is the loop's netpoll.Owner, in terms this
// package can name.
type Abandoner interface {
	// Abandon discards the connection after work for it panicked with v;
	// it returns the site and the request line it was serving, when it
	// knows them.
	Abandon(v any) (site, request string)
}

// RequestLine is the request as a log names it: "GET /a?b HTTP/2.0".
func (r *Request) RequestLine() string { return r.Method + " " + r.Path + " " + r.Proto }

// Handoff describes why a request re-enters its site's routes, for the
// placeholders that read it ({err.*}, {rp.*}).
type Handoff struct {
	// ErrStatus, ErrMessage and ErrID are the error being rendered
	// (handle_errors): its status, its message, an identifier of this
	// occurrence.
	ErrStatus  int
	ErrMessage string
	ErrID      string
	// Root is the root the routes had set when the error happened
	// (Caddy's {http.vars.root}): the error routes start from it, so
	// their file_server finds the site's error pages.
	Root string
	// Status and Header are the origin's response handle_response
	// matched.
	Status int
	Header []Field
	// Depth counts the times the request re-entered its routes before.
	Depth int
	// Fields are the response fields set when the error happened (the
	// site's immediate header edits, the failing handler's own, as
	// file_server's Allow): Caddy's response header map, which its error
	// routes write their answer into.
	Fields []Field
}

// Capture is one regexp match a matcher saved for the request's
// placeholders: the groups of Input at Index (as FindStringSubmatchIndex
// gives them), named by Groups (SubexpNames), under the matcher's Name.
type Capture struct {
	Name   string
	Input  string
	Index  []int
	Groups []string
}

// Group returns the capture group key (its number, or its name in the
// regexp) and whether this match has it. A group that took no part in the
// match is "" and present, as Caddy sets it.
func (c *Capture) Group(key string) (string, bool) {
	i := -1
	if n, err := strconv.Atoi(key); err == nil {
		i = n
	} else {
		for j, g := range c.Groups {
			if j > 0 && g == key {
				i = j
				break
			}
		}
	}
	if i < 0 || 2*i+1 >= len(c.Index) {
		return "", false
	}
	if c.Index[2*i] < 0 {
		return "", true
	}
	return c.Input[c.Index[2*i]:c.Index[2*i+1]], true
}

// TLSState is what an access log says of a request's TLS connection, as
// Caddy logs it.
type TLSState struct {
	Resumed     bool
	Version     uint16
	CipherSuite uint16
	Proto       string // the ALPN protocol
	ServerName  string
	ECH         bool
	// PeerCertificate is the client's certificate (client_auth), nil
	// when it sent none: Caddy's {http.request.tls.client.*}.
	PeerCertificate *x509.Certificate
}

// ClientValues appends to dst the values of every field named name
// (lowercase) the client sent, hop-by-hop ones included, joined with ","
// as Caddy's {http.request.header.*} joins them; ok reports one was there.
func (r *Request) ClientValues(dst []byte, name string) (out []byte, ok bool) {
	for _, fs := range [2][]Field{r.Header, r.Hop} {
		for _, f := range fs {
			if f.Name == name {
				if ok {
					dst = append(dst, ',')
				}
				dst, ok = append(dst, f.Value...), true
			}
		}
	}
	return dst, ok
}

// Get returns the first value of the named field (name in lowercase).
func (r *Request) Get(name string) (string, bool) {
	for _, f := range r.Header {
		if f.Name == name {
			return f.Value, true
		}
	}
	return "", false
}

// ResponseWriter is one request's stream as the handler sees it.
type ResponseWriter interface {
	// WriteHeader sends an informational head (100–199 except 101) or the
	// final head (200–599). Fields use lowercase names and carry no
	// connection-specific fields. With endStream the response has no body.
	WriteHeader(status int, fields []Field, endStream bool) error
	// Write queues response body bytes and returns how many it took: as many
	// as flow control and the connection's output budget allow. When it
	// returns n < len(p) the handler keeps the rest and waits for OnWritable.
	Write(p []byte) (int, error)
	// Close ends the response, sending trailers when there are any.
	Close(trailers []Field) error
	// Reset aborts the stream: RST_STREAM with code on h2, a closed
	// connection on HTTP/1.1. No more events arrive for the stream.
	Reset(code uint32)
	// Consumed reports that the handler is done with n bytes of request body,
	// so the client may send that many more.
	Consumed(n int)
}

// Events are a request's notifications to its handler after Serve.
type Events interface {
	// OnBody delivers request body bytes; p is valid only during the call.
	// Each byte counts against the client's window until Consumed.
	OnBody(p []byte)
	// OnBodyEnd reports the end of the request body, with trailers if any.
	OnBodyEnd(trailers []Field)
	// OnWritable reports that Write may accept more bytes.
	OnWritable()
	// OnAbort reports that the client reset the stream or the connection
	// is gone. The ResponseWriter must not be used afterwards.
	OnAbort(err error)
}

// Releaser is implemented by Events that want to reuse their memory for a
// later request. A front end calls OnRelease once, on the loop, when it is
// done with the request: no Events call for it follows. In return the
// handler makes no call on the request's ResponseWriter or Request after
// OnRelease (work it still has, such as reading the rest of an origin's
// response, goes on without them), so the front end may reuse both for a
// later request. Like every Events call it comes from one of the front
// end's entry points, never from inside a ResponseWriter call, and it must
// not call the front end. A request that ends with its connection
// (Abort, a closed HTTP/1.1 connection) may never see OnRelease; its
// memory is then simply left to the collector.
type Releaser interface {
	OnRelease()
}

// BodyRefuser is implemented by a ResponseWriter whose front end wants to
// know, before the response head, that the handler will read no more of
// the request body (the proxy answering an error while an upload still
// arrives). HTTP/1.1 then says connection: close in that head when the
// rest is too much to read and drop, since the connection will close
// after it (RFC 9112 §9.6); a handler that keeps reading the body while it
// responds (a streaming echo) calls nothing, and the connection stays
// reusable.
//
// Handlers call it through RefuseBody, which walks wrappers (see the
// package doc).
type BodyRefuser interface {
	RefuseBody()
}

// ErrorRouter is implemented by a ResponseWriter whose site renders the
// errors its handlers answer themselves (Caddy's handle_errors). A
// handler about to answer with its own error response (a 502 when the
// origin is down) offers it first: when RouteError reports true, the
// site's routes took the stream over and the handler writes nothing more
// on it, though it still ends as usual (OnRelease included). fields are
// the response fields the handler had set (Caddy's response header map
// when the error is returned): the error's answer carries them. The
// callee copies what it keeps.
//
// Handlers call it through RouteError or RouteErrorFields.
type ErrorRouter interface {
	RouteError(status int, message string, fields []Field) bool
}

// Flusher is implemented by a ResponseWriter that may hold body bytes
// back to work on them (an encoder compressing the response). Front ends
// never hold bytes a Write took, so theirs need none. A handler whose
// source of body bytes went quiet for now (an origin's read would block)
// calls Flush, so what was written so far reaches the client without
// waiting for more: a server-sent event is not kept back until the next.
// Flush obeys the same backpressure as Write: what the client cannot take
// yet waits for OnWritable.
//
// Handlers call it through Flush.
type Flusher interface {
	Flush()
}

// Handler serves requests on the loop.
type Handler interface {
	// Serve starts serving req. It returns the request's event sink, which
	// may be nil only when the request has no body and the handler has
	// already completed the response in Serve.
	Serve(req *Request, w ResponseWriter) Events
}

// Timer is a pending callback that can be cancelled.
type Timer interface {
	// Stop cancels the timer; it reports whether the timer was still pending.
	Stop() bool
}

// ResettableTimer is a Timer that can be armed again after it stopped or
// fired, so an owner that arms one timeout after another (an HTTP/1.1
// connection's header and idle timeouts) allocates its timer once.
type ResettableTimer interface {
	Timer
	// Reset schedules the timer's function to run after d, whether or not
	// it was pending, and reports whether it was.
	Reset(d time.Duration) bool
}

// Clock is the time source of the loop that owns the connection. Front ends
// read time only through it, so tests can drive every timeout and rate
// limit with a clock they control.
type Clock interface {
	// Now returns the loop's current time (read once per iteration).
	Now() time.Time
	// AfterFunc runs f on the loop after d.
	AfterFunc(d time.Duration, f func()) Timer
}

// Transport is what a front end needs from the connection beneath it: a
// TLS session over a socket, owned by the loop.
type Transport interface {
	// Write queues plaintext for the client; it never blocks or fails. The
	// bytes are encrypted and written to the socket once per loop iteration.
	Write(p []byte)
	// Buffered reports how many bytes are queued and not yet on the socket;
	// front ends stop producing body data above their high-water mark and
	// resume on the front end's OnDrained.
	Buffered() int
	// FlushLater asks for the front end's Flush at the end of this loop
	// iteration, before the connection encrypts and writes what is queued.
	// It is cheap to call repeatedly; ResponseWriter calls use it instead
	// of producing output themselves.
	FlushLater()
	// PauseRead stops (true) or resumes (false) feeding client bytes; an
	// HTTP/1.1 front end uses it for backpressure on request bodies and
	// pipelining. Resuming never feeds from inside the call: it re-arms the
	// descriptor, and the loop calls Feed in this iteration or the next —
	// with an empty slice when no new bytes arrived, so the front end can
	// take up input it held back. PauseRead(false) while not paused asks
	// for that Feed all the same.
	PauseRead(pause bool)
	// Close flushes what is queued and closes the connection.
	Close()
	// Clock schedules timeouts on the owning loop.
	Clock() Clock
	// RemoteAddr is the client's address.
	RemoteAddr() netip.AddrPort
}

// HalfCloser is implemented by a Transport that can end its write side
// alone, which an HTTP/1.1 tunnel needs to carry the origin's half-close.
type HalfCloser interface {
	// CloseWrite writes what is queued, then ends the write direction
	// (TLS close_notify, shutdown(SHUT_WR)) while reading goes on. Writes
	// after it are dropped.
	CloseWrite()
}

// PathRTT is implemented by a Transport that measured the round trip to
// its client before the front end started: a TLS handshake's flight and
// the client's answer (see tls.Session.HandshakeRTT). The h2 front end
// uses it to judge the client's first flight, before a PING of its own
// could have measured anything.
type PathRTT interface {
	// HandshakeRTT is the round trip measured, or 0 when none was.
	HandshakeRTT() time.Duration
}

// EOFReceiver is implemented by a front end that can use the end of the
// client's byte stream while it still writes (an HTTP/1.1 tunnel).
type EOFReceiver interface {
	// PeerEOF reports that the client's byte stream ended. It returns true
	// when the front end keeps the connection half-open; the transport
	// then feeds nothing more (Feed still comes, empty, after PauseRead
	// false) and waits for Close. False means the front end has no use
	// for a half-open connection: the transport aborts it as before.
	PeerEOF() bool
}

// TunnelCarrier is implemented by a front end that can say whether it
// carries a tunnel now, so the connection's own write timeout leaves it
// alone: a tunnel has its own idle timer (stream_timeout).
type TunnelCarrier interface {
	CarriesTunnel() bool
}

// ServerConn is a front end protocol (HTTP/2 or HTTP/1.1) on one client
// connection, driven by the connection beneath it.
type ServerConn interface {
	// Feed hands over plaintext from the client; p is valid only during the
	// call, and empty when the call only lets the front end take up input
	// it held back (see Transport.PauseRead). A returned error means the
	// front end has written what it had to say (a GOAWAY, a 400) with
	// Transport.Write and the connection should be closed.
	Feed(p []byte) error
	// Flush produces the output queued since the last call (after
	// Transport.FlushLater) and hands it to Transport.Write; the connection
	// calls it at the end of the iteration, before it writes the socket.
	Flush()
	// OnDrained reports that everything queued reached the socket.
	OnDrained()
	// Shutdown starts a graceful close: no new requests, in-flight ones run
	// to completion, then the front end closes the transport.
	Shutdown()
	// Abort reports that the connection is gone (peer reset, read error,
	// forced close). Every open stream gets OnAbort.
	Abort(err error)
}

// HTTP/2 error codes used across front ends and handlers (RFC 9113 §7).
const (
	CodeNo            uint32 = 0x0
	CodeProtocol      uint32 = 0x1
	CodeInternal      uint32 = 0x2
	CodeCancel        uint32 = 0x8
	CodeRefusedStream uint32 = 0x7
)
