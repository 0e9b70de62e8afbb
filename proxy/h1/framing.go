package h1

import (
	"strconv"

	"github.com/pollproxy/pollproxy/proxy/field"
	"github.com/pollproxy/pollproxy/proxy/stream"
)

// framing is what one scan of a head's fields found about how its body is
// delimited and what its connection does next (RFC 9112 §6, §9.3; RFC
// 9110 §7.6.1, §7.8, §10.1.1). The request parser, the response parser
// and the ServerConn's WriteHeader all read framing through it, so the
// two ends of the proxy cannot come to frame one message two ways: each
// side only maps a defect (framingErr) to its own answer.
type framing struct {
	length   int64  // the declared Content-Length, -1 without one
	lengthAs string // the first Content-Length value as sent
	lengths  int    // Content-Length fields seen
	te       bool   // a Transfer-Encoding field was present
	chunked  bool   // chunked was listed (last, and once: see addCodings)
	codings  int    // transfer codings listed, over every field

	// The Connection options (RFC 9110 §7.6.1): close, keep-alive and
	// upgrade as flags, every other one in tokens (the names of fields the
	// sender wants dropped as hop-by-hop).
	close, keepAlive, upgrade bool
	tokens                    []string

	hosts      int    // Host fields seen
	host       string // the last one's value
	upgrades   int    // Upgrade fields seen
	upgradeTo  string // the last one's value
	expect     bool   // an HTTP/1.1 request carried Expect: 100-continue
	keepAliveP string // the last Keep-Alive field's parameters
}

// framingErr is a defect of a head's framing fields; each side maps it to
// its own answer (requestFramingErrs, responseFramingErrs).
type framingErr uint8

const (
	framingOK         framingErr = iota
	badLength                    // a Content-Length element that is not 1*DIGIT
	conflictingLength            // Content-Length elements that differ
	badCoding                    // a malformed Transfer-Encoding list, or chunked not its one final coding
	unknownCoding                // another transfer coding before chunked
	lengthAndCoding              // Content-Length together with Transfer-Encoding
	codingIn10                   // Transfer-Encoding in an HTTP/1.0 message
	framingLookalike             // content_length or transfer_encoding
	badExpectation               // a request's Expect other than 100-continue
	numFramingErrs
)

// requestFramingErrs is what a server answers each defect with: 400 where
// RFC 9112 §6.3 requires it, 501 for a transfer coding it does not
// implement (§6.1), 417 for an expectation it cannot meet (RFC 9110
// §10.1.1).
var requestFramingErrs = [numFramingErrs]*Error{
	badLength:         errBadCL,
	conflictingLength: errMultiCL,
	badCoding:         errBadTE,
	unknownCoding:     errUnknownTE,
	lengthAndCoding:   errCLTE,
	codingIn10:        errTE10,
	framingLookalike:  errUnderscoreFrame,
	badExpectation:    errExpect,
}

// responseFramingErrs is the backend side's: every defect of an origin's
// response is a bad gateway, for the same reason the request side gives.
var responseFramingErrs = func() (t [numFramingErrs]*Error) {
	for i, e := range requestFramingErrs {
		if e != nil {
			t[i] = &Error{502, e.Reason}
		}
	}
	return t
}()

// scannedSets are the field sets every name scan looks at belongs to:
// the framing fields, the connection's, and the front end's own.
const scannedSets = field.Framing | field.FramingLookalike | field.ConnectionSpecific | field.FrontEndOwned

// newFraming returns an empty framing that keeps Connection options in
// tokens' storage. A parser scans into a framing of its own stack and
// keeps only the tokens' storage across heads: what one head's scan found
// is read while its head is parsed, and never after.
func newFraming(tokens []string) framing {
	return framing{length: -1, tokens: tokens[:0]}
}

// scan reads the fields of one head (spans into s) once: it records each
// span's field.Lookup rule for the forwarding pass, fills f (from
// newFraming), and returns the first defect. The Expect rule applies to
// HTTP/1.1 requests only (request, !proto10).
func (f *framing) scan(spans []span, s string, proto10, request bool) framingErr {
	for k := range spans {
		sp := &spans[k]
		name := s[sp.ns:sp.ne]
		// One table lookup per field, kept for the forwarding pass; a
		// field in none of the sets below (most of them) is none of the
		// cases of the switch.
		if sp.rule = field.Lookup(name); sp.rule&scannedSets == 0 {
			continue
		}
		val := s[sp.vs:sp.ve]
		switch name {
		case "content-length":
			if err := f.addLength(val); err != framingOK {
				return err
			}
		case "transfer-encoding":
			if err := f.addCodings(val); err != framingOK {
				return err
			}
		case "connection":
			f.addOptions(val)
		case "host":
			f.hosts++
			f.host = val
		case "upgrade":
			f.upgrades++
			f.upgradeTo = val
		case "expect":
			if !request || proto10 {
				break // RFC 9110 §10.1.1: ignored in HTTP/1.0 requests
			}
			if !equalFoldASCII(val, "100-continue") {
				return badExpectation
			}
			f.expect = true
		case "keep-alive":
			f.keepAliveP = val
		default:
			if sp.rule.Has(field.FramingLookalike) {
				return framingLookalike
			}
		}
	}
	switch {
	case f.te && f.lengths > 0:
		return lengthAndCoding
	case f.te && proto10:
		return codingIn10
	case f.te && !f.chunked:
		// The length cannot be determined (RFC 9112 §6.3 item 4).
		return badCoding
	case f.te && f.codings != 1:
		// Another coding would reach the recipient undecoded: pollproxy
		// removes only chunked when it re-frames a body.
		return unknownCoding
	}
	return framingOK
}

// addLength folds one Content-Length field value (a list, as some senders
// repeat the value: "5, 5") into f. Differing values are a defect: each
// side of a proxy could pick another one (RFC 9112 §6.3).
func (f *framing) addLength(val string) framingErr {
	f.lengths++
	if f.lengths == 1 {
		f.lengthAs = val
	}
	for rest := val; ; {
		item, next, more := nextListItem(rest)
		rest = next
		n, ok := field.ParseContentLength(item)
		if !ok {
			return badLength
		}
		if f.length >= 0 && n != f.length {
			return conflictingLength
		}
		f.length = n
		if !more {
			return framingOK
		}
	}
}

// addCodings folds one Transfer-Encoding field value into f. chunked must
// be the final coding and appear once; an empty list item is malformed.
// Other codings are counted here and judged by scan, which knows the
// final one.
func (f *framing) addCodings(val string) framingErr {
	f.te = true
	for rest := val; ; {
		item, next, more := nextListItem(rest)
		rest = next
		switch {
		case item == "", f.chunked:
			return badCoding
		case equalFoldASCII(item, "chunked"):
			f.chunked = true
		}
		f.codings++
		if !more {
			return framingOK
		}
	}
}

// addOptions reads one Connection field value.
func (f *framing) addOptions(val string) {
	for rest := val; ; {
		item, next, more := nextListItem(rest)
		rest = next
		switch {
		case equalFoldASCII(item, "close"):
			f.close = true
		case equalFoldASCII(item, "keep-alive"):
			f.keepAlive = true
		case equalFoldASCII(item, "upgrade"):
			f.upgrade = true
		case item != "":
			f.tokens = append(f.tokens, item)
		}
		if !more {
			return
		}
	}
}

// persistent reports whether the sender lets the connection carry another
// message (RFC 9112 §9.3): HTTP/1.1 unless it said close, HTTP/1.0 only
// if it said keep-alive.
func (f *framing) persistent(proto10 bool) bool {
	if proto10 {
		return f.keepAlive && !f.close
	}
	return !f.close
}

// body returns the framing the fields declare: chunked, a length, or
// none for a zero length. Without either a request has no body, and a
// response runs until the connection closes (RFC 9112 §6.3 items 6, 7).
func (f *framing) body(request bool) bodyMode {
	switch {
	case f.te:
		return bodyChunked
	case f.length > 0:
		return bodyLength
	case f.length == 0 || request:
		return bodyNone
	}
	return bodyClose
}

// responseBody applies RFC 9112 §6.3 items 1 and 2 to a response whose
// fields declare declared (framing.body): the response to a HEAD, a 1xx,
// a 204 and a 304 end with their head, whatever they announce.
func responseBody(status int, head bool, declared bodyMode) bodyMode {
	if status < 200 || head || status == 204 || status == 304 {
		return bodyNone
	}
	return declared
}

// appendForwarded appends to dst the fields of a scanned head that go on
// past this hop: none in drop (the side's own set of fields that end
// here), none that the Connection options name, and Content-Length once
// and canonical when withLength, so that the next recipient never sees
// "5, 5" or "007" and has to interpret it.
func (f *framing) appendForwarded(dst []stream.Field, spans []span, s string, drop field.Rule, withLength bool) []stream.Field {
	lengthDone := false
	for _, sp := range spans {
		if sp.rule.Has(drop) {
			continue
		}
		name := s[sp.ns:sp.ne]
		switch {
		case sp.rule == 0:
		case name == "content-length":
			if lengthDone || !withLength {
				continue // identical duplicates collapse into one
			}
			lengthDone = true
			v := f.lengthAs
			if !canonicalDigits(v) {
				v = strconv.FormatInt(f.length, 10)
			}
			dst = append(dst, stream.Field{Name: name, Value: v})
			continue
		}
		if namedBy(f.tokens, name) {
			continue
		}
		dst = append(dst, stream.Field{Name: name, Value: s[sp.vs:sp.ve]})
	}
	return dst
}

// appendHop appends to dst the hop-by-hop fields of a scanned request
// head that appendForwarded leaves out (all but Transfer-Encoding, which
// is framing): what routing's placeholders and matchers still see.
func (f *framing) appendHop(dst []stream.Field, spans []span, s string) []stream.Field {
	for _, sp := range spans {
		name := s[sp.ns:sp.ne]
		hop := sp.rule.Has(field.HopByHop) && !sp.rule.Has(field.Framing)
		if hop || !sp.rule.Has(field.FrontEndOwned) && namedBy(f.tokens, name) {
			dst = append(dst, stream.Field{Name: name, Value: s[sp.vs:sp.ve]})
		}
	}
	return dst
}

// namedBy reports whether a Connection option list names a field.
func namedBy(tokens []string, name string) bool {
	for _, t := range tokens {
		if equalFoldASCII(t, name) {
			return true
		}
	}
	return false
}

// canonicalDigits reports a decimal without leading zeros or separators.
func canonicalDigits(v string) bool {
	if v == "" || len(v) > 1 && v[0] == '0' {
		return false
	}
	for i := 0; i < len(v); i++ {
		if !isDigit(v[i]) {
			return false
		}
	}
	return true
}
