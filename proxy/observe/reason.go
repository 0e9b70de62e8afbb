package observe

// Reason is why an exchange ended other than as the origin meant it, or
// why an upstream was counted as failing. The proxy records one value
// where it decides, so the text the client and the access log read and
// the metrics' reason label are spelled in one place, here.
type Reason uint8

// Reasons. The upstream failures (the reason label of
// pollproxy_upstream_failures_total) are ReasonConnect through
// ReasonUnhealthy; the others end an exchange without blaming the
// upstream.
const (
	// ReasonNone: the exchange ended as the origin meant it (a complete
	// response, a tunnel both sides closed).
	ReasonNone Reason = iota

	// ReasonConnect: the connect failed (refused, reset, unreachable);
	// the detail says how.
	ReasonConnect
	// ReasonConnectTimeout: the connect took longer than connect_timeout
	// (or, to an HTTPS upstream, the TLS handshake than tls_timeout).
	ReasonConnectTimeout
	// ReasonTLS: TLS with an HTTPS upstream failed: its certificate did
	// not verify, the handshake failed, or an alert broke the connection
	// before a response head; the detail says how.
	ReasonTLS
	// ReasonHeaderTimeout: no response head within
	// response_header_timeout.
	ReasonHeaderTimeout
	// ReasonWriteTimeout: writing the request stayed blocked for
	// write_timeout.
	ReasonWriteTimeout
	// ReasonBadResponse: the response head could not be parsed.
	ReasonBadResponse
	// ReasonBadBody: the response body could not be parsed, after its
	// head went to the client.
	ReasonBadBody
	// ReasonBroken: the connection broke before a response head (after
	// the one retry a reused connection may get); the detail says how.
	ReasonBroken
	// ReasonBrokenMidResponse: the connection broke after the response
	// head went to the client; the detail says how.
	ReasonBrokenMidResponse
	// ReasonBadHandshake: the origin's Sec-WebSocket-Accept did not match
	// the key pollproxy sent for an RFC 8441 extended CONNECT.
	ReasonBadHandshake
	// ReasonUnhealthy: a response whose status or latency the passive
	// health checks count as a failure (the response itself goes to the
	// client).
	ReasonUnhealthy

	// ReasonQueueFull: the pool's queue of waiting requests was full.
	ReasonQueueFull
	// ReasonQueueTimeout: no connection became free within
	// connect_timeout.
	ReasonQueueTimeout
	// ReasonReadTimeout: the response body stayed silent for
	// read_timeout.
	ReasonReadTimeout
	// ReasonBodyTimeout: the client's request body did not arrive within
	// read_body.
	ReasonBodyTimeout
	// ReasonBodyTooLarge: the client's request body was longer than
	// request_body max_size.
	ReasonBodyTooLarge
	// ReasonBadProtocol: an extended CONNECT named a protocol that cannot
	// be written in Upgrade.
	ReasonBadProtocol
	// ReasonClientGone: the client reset the stream or went away; the
	// detail, when set, is the error a write to it returned.
	ReasonClientGone
	// ReasonRemoved: a reload removed the exchange's site or upstream.
	ReasonRemoved
	// ReasonStreamTimeout: a tunnel moved no byte for stream_timeout.
	ReasonStreamTimeout
	// ReasonTunnelBroken: the origin's side of an open tunnel failed; the
	// detail says how.
	ReasonTunnelBroken
	// ReasonLengthRequired: a FastCGI request's body of unknown length
	// was longer than what is buffered to learn it (411, as Caddy).
	ReasonLengthRequired
	// ReasonBadPath: a FastCGI request's path cannot name a script
	// safely (a NUL byte, escaped and decoded forms that name different
	// scripts): 400, as Caddy.
	ReasonBadPath

	// NumReasons is the number of reasons, for tables indexed by Reason.
	NumReasons = int(iota)
)

// reasonNames are the label values.
var reasonNames = [NumReasons]string{
	ReasonNone:              "none",
	ReasonConnect:           "connect",
	ReasonConnectTimeout:    "connect_timeout",
	ReasonTLS:               "tls",
	ReasonHeaderTimeout:     "header_timeout",
	ReasonWriteTimeout:      "write_timeout",
	ReasonBadResponse:       "bad_response",
	ReasonBadBody:           "bad_body",
	ReasonBroken:            "broken",
	ReasonBrokenMidResponse: "broken_mid_response",
	ReasonBadHandshake:      "bad_handshake",
	ReasonUnhealthy:         "unhealthy",
	ReasonQueueFull:         "queue_full",
	ReasonQueueTimeout:      "queue_timeout",
	ReasonReadTimeout:       "read_timeout",
	ReasonBodyTimeout:       "body_timeout",
	ReasonBodyTooLarge:      "body_too_large",
	ReasonBadProtocol:       "bad_protocol",
	ReasonClientGone:        "client_gone",
	ReasonRemoved:           "removed",
	ReasonStreamTimeout:     "stream_timeout",
	ReasonTunnelBroken:      "tunnel_broken",
	ReasonLengthRequired:    "length_required",
	ReasonBadPath:           "bad_path",
}

// reasonTexts are what the client reads in pollproxy's own answer and
// the access log in its error field; a detail follows the ones that end
// in ": ".
var reasonTexts = [NumReasons]string{
	ReasonConnect:           "bad gateway: ",
	ReasonConnectTimeout:    "gateway timeout: connect to upstream timed out",
	ReasonTLS:               "bad gateway: TLS with upstream failed: ",
	ReasonHeaderTimeout:     "gateway timeout: upstream sent no response head in time",
	ReasonWriteTimeout:      "gateway timeout: writing the request to upstream timed out",
	ReasonBadResponse:       "bad gateway: malformed response from upstream",
	ReasonBadBody:           "malformed response body from upstream",
	ReasonBroken:            "bad gateway: ",
	ReasonBrokenMidResponse: "upstream broke mid-response: ",
	ReasonBadHandshake:      "bad gateway: upstream's Sec-WebSocket-Accept does not match",
	ReasonUnhealthy:         "unhealthy response from upstream",
	ReasonQueueFull:         "upstream queue full",
	ReasonQueueTimeout:      "service unavailable: no upstream connection became free in time",
	ReasonReadTimeout:       "upstream read timed out",
	ReasonBodyTimeout:       "request timeout: the request body did not arrive in time",
	ReasonBodyTooLarge:      "request body too large",
	ReasonBadProtocol:       "bad request: unsupported :protocol",
	ReasonClientGone:        "client went away",
	ReasonRemoved:           "removed by reload",
	ReasonStreamTimeout:     "stream_timeout",
	ReasonTunnelBroken:      "origin: ",
	ReasonLengthRequired:    "length required: a body of unknown length too long to buffer for FastCGI",
	ReasonBadPath:           "bad request: invalid script path",
}

// String is the reason's label value, such as "connect_timeout".
func (r Reason) String() string {
	if int(r) < NumReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Failure reports whether r blames the upstream: a value of the reason
// label of the upstream failure metric.
func (r Reason) Failure() bool { return r >= ReasonConnect && r <= ReasonUnhealthy }

// Text is the reason in words, with detail (a socket error's text) where
// the reason has one: what pollproxy's own answer says, and the access
// log's error field. ReasonNone has none.
func (r Reason) Text(detail string) string {
	if int(r) >= NumReasons {
		return ""
	}
	t := reasonTexts[r]
	switch {
	case r == ReasonClientGone && detail != "":
		return "client: " + detail
	case t != "" && t[len(t)-1] == ' ':
		return t + detail
	}
	return t
}
