package field

import (
	"strings"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// Rule is a set of the named field sets below that one field name belongs
// to. Callers test membership with Has; the zero Rule is an ordinary field.
type Rule uint16

// The named field sets. Each one states why its members are set apart and
// where the rule comes from; Lookup holds the members, one name per row.
const (
	// ConnectionSpecific fields describe one connection only (RFC 9113
	// §8.2.2): a message carrying one is malformed in HTTP/2, and the
	// HTTP/2 front end never writes one.
	ConnectionSpecific Rule = 1 << iota

	// HopByHop fields are ConnectionSpecific plus TE (RFC 9110 §7.6.1):
	// every intermediary removes them, since they describe the connection
	// they came on, not the message.
	HopByHop

	// FrontEndOwned fields are removed from a request by the HTTP/1.1
	// front end before a handler sees it: the hop-by-hop ones, Host (it
	// becomes the request's authority, RFC 9110 §7.2) and Expect (answered
	// hop by hop with 100 Continue, RFC 9110 §10.1.1).
	FrontEndOwned

	// NotToOrigin fields are never copied from the client's request to the
	// origin (RFC 9110 §7.6.1, §7.2): hop-by-hop ones, and the ones the
	// translation writes itself from what it verified (Host from the
	// authority, X-Forwarded-Proto, X-Forwarded-Host), so a client can
	// neither spoof nor duplicate them.
	NotToOrigin

	// AppendedByProxy fields are lists each proxy adds its own hop to
	// rather than replacing (X-Forwarded-For; Via, RFC 9110 §7.6.3).
	AppendedByProxy

	// NotToClient fields are never copied from a handler's response to an
	// HTTP/1.1 client: hop-by-hop ones, and the framing the front end
	// chooses itself (Content-Length, Transfer-Encoding and Trailer, RFC
	// 9112 §6). The HTTP/2 front end strips only ConnectionSpecific ones.
	NotToClient

	// NotInTrailer fields may not be sent in (or are dropped from) a
	// trailer section (RFC 9110 §6.5.1): framing, routing, request
	// modifiers, authentication, response control and content metadata,
	// which a recipient merging trailers into the head would act on.
	NotInTrailer

	// Framing fields delimit a message body (RFC 9112 §6.1, §6.2): the
	// writer of a message chooses them; they are never copied.
	Framing

	// FramingLookalike names are valid tokens that CGI-style origin stacks
	// fold onto the framing fields ("content_length" and
	// "transfer_encoding" both become CONTENT_LENGTH and the like), which
	// would let one message be framed two ways: refused in a head, dropped
	// from trailers.
	FramingLookalike
)

// Has reports whether r includes every set in s.
func (r Rule) Has(s Rule) bool { return r&s == s }

// Shorthands for the rows of Lookup.
const (
	connSpecific = ConnectionSpecific | HopByHop | FrontEndOwned | NotToOrigin | NotToClient | NotInTrailer
	hopByHop     = HopByHop | FrontEndOwned | NotToOrigin | NotToClient | NotInTrailer
)

// Lookup returns the sets a lowercase field name belongs to; 0 for every
// field that has no special rule. It is the table of field rules: each row
// is one name and its sets.
func Lookup(name string) Rule {
	switch name {
	case "connection", "keep-alive", "proxy-connection", "upgrade":
		return connSpecific
	case "transfer-encoding":
		return connSpecific | Framing
	case "te":
		return hopByHop
	case "host":
		return FrontEndOwned | NotToOrigin | NotInTrailer
	case "expect":
		return FrontEndOwned | NotInTrailer
	case "x-forwarded-proto", "x-forwarded-host":
		return NotToOrigin
	case "x-forwarded-for", "via":
		return AppendedByProxy
	case "content-length":
		return NotToClient | NotInTrailer | Framing
	case "trailer":
		return NotToClient | NotInTrailer
	case "content-encoding", "content-type", "content-range", "authorization",
		"proxy-authorization", "set-cookie", "cookie", "cache-control", "range",
		"max-forwards":
		return NotInTrailer
	case "content_length", "transfer_encoding":
		return NotInTrailer | FramingLookalike
	}
	return 0
}

// Byte classes, as tables so a scanner costs one load per byte.
var (
	tchar      [256]bool // RFC 9110 §5.6.2
	lowerTchar [256]bool // tchar without uppercase: RFC 9113 §8.2.1 names
	valueChar  [256]bool // field-vchar, SP, HTAB, obs-text: no CTL, no DEL (RFC 9110 §5.5)
	hostChar   [256]bool // uri-host[:port] characters, no userinfo (RFC 3986 §3.2)
	pathChar   [256]bool // visible ASCII but '#': what a request target may hold (RFC 3986 §3.3)
)

func init() {
	for c := '0'; c <= '9'; c++ {
		tchar[c], hostChar[c] = true, true
	}
	for c := 'a'; c <= 'z'; c++ {
		tchar[c], tchar[c-'a'+'A'] = true, true
		hostChar[c], hostChar[c-'a'+'A'] = true, true
	}
	for _, c := range "!#$%&'*+-.^_`|~" {
		tchar[c] = true
	}
	for _, c := range "-._~!$&'()*+,;=:[]%" {
		hostChar[c] = true
	}
	for c := 0; c < 256; c++ {
		lowerTchar[c] = tchar[c] && !('A' <= c && c <= 'Z')
		valueChar[c] = c == '\t' || c >= 0x20 && c != 0x7f
		pathChar[c] = c > 0x20 && c < 0x7f && c != '#'
	}
}

// IsTchar reports whether c may appear in a token (RFC 9110 §5.6.2): a
// method or a field name.
func IsTchar(c byte) bool { return tchar[c] }

// IsValueByte reports whether c may appear in a field value (RFC 9110
// §5.5): visible ASCII, SP, HTAB and obs-text; no other control, no DEL.
func IsValueByte(c byte) bool { return valueChar[c] }

// IsPathByte reports whether c may appear in a request target: visible
// ASCII except '#', since a fragment is never sent (RFC 3986 §3.3, RFC
// 9112 §3.2).
func IsPathByte(c byte) bool { return pathChar[c] }

// ValidMethod reports a non-empty token (RFC 9110 §9.1).
func ValidMethod(s string) bool { return validToken(s, &tchar) }

// ValidName reports a non-empty token, any case (RFC 9110 §5.1): a field
// name an HTTP/1.1 peer may send or receive.
func ValidName(s string) bool { return validToken(s, &tchar) }

// ValidLowerName reports a non-empty token without uppercase letters: a
// field name as HTTP/2 requires it (RFC 9113 §8.2.1).
func ValidLowerName(s string) bool { return validToken(s, &lowerTchar) }

func validToken(s string, class *[256]bool) bool { return s != "" && allIn(s, class) }

// allIn reports whether every byte of s is in class.
func allIn(s string, class *[256]bool) bool {
	for i := 0; i < len(s); i++ {
		if !class[s[i]] {
			return false
		}
	}
	return true
}

// ValidValue reports a field value that every HTTP/1.1 recipient reads as
// pollproxy does (RFC 9110 §5.5, RFC 9113 §8.2.1): no NUL, CR, LF or other
// control but HTAB, no DEL, and no leading or trailing whitespace, which a
// recipient would strip. obs-text (0x80–0xFF) passes, as opaque bytes.
func ValidValue(s string) bool {
	if s == "" {
		return true
	}
	if s[0] == ' ' || s[0] == '\t' || s[len(s)-1] == ' ' || s[len(s)-1] == '\t' {
		return false
	}
	return allIn(s, &valueChar)
}

// ValidAuthority reports whether s holds only host[:port] characters (RFC
// 3986 §3.2): reg-name, IP literal and port; no userinfo ("@"), which is a
// classic way to confuse authority parsing downstream. An empty s passes:
// whether an authority is required is the caller's rule.
func ValidAuthority(s string) bool { return allIn(s, &hostChar) }

// ValidPath reports whether s holds only request-target characters (see
// IsPathByte). An empty s passes.
func ValidPath(s string) bool { return allIn(s, &pathChar) }

// maxLengthDigits bounds a Content-Length: 18 digits stay below 2^63, so
// the sum cannot overflow, and nobody sends an exabyte.
const maxLengthDigits = 18

// ParseContentLength reads one Content-Length value (RFC 9110 §8.6):
// 1*DIGIT only — no sign, no whitespace, no hex, no list — of at most 18
// digits. Leading zeros pass; a list ("5, 5") is the caller's to split.
func ParseContentLength(s string) (int64, bool) {
	if len(s) == 0 || len(s) > maxLengthDigits {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// UpgradeToken reports whether v names one protocol that pollproxy may
// ask an origin to switch to: in an HTTP/1.1 Upgrade field, or as an
// HTTP/2 extended CONNECT's :protocol (RFC 8441 §4), which becomes one.
// Both front ends ask this one rule, so that neither can tunnel what the
// other refuses.
//
// v is a token with an optional "/version" (RFC 9110 §7.8). A list is not
// offered on: the origin would pick one and the client could not tell
// which was tunnelled. h2c is refused (any case, any version): it asks
// the origin to speak cleartext HTTP/2 on the tunnel, whose requests the
// proxy would carry as opaque bytes without routing or checking them, a
// known way around a proxy's access rules; pollproxy's backend
// connections speak HTTP/1.1 only, and RFC 9113 §3.1 defines h2c for
// cleartext connections, never for one that came over TLS.
func UpgradeToken(v string) bool {
	name, version, slash := strings.Cut(v, "/")
	if !ValidName(name) || slash && !ValidName(version) {
		return false
	}
	return !strings.EqualFold(name, "h2c")
}

// CGIAlias reports whether a field name holds '_' or '.': CGI-style
// frameworks (PHP, WSGI, FastCGI) turn '-' into '_' (and PHP '.' too), so
// "X_Forwarded_For" reaches them as the same variable as the real
// X-Forwarded-For. Such fields are dropped from every request, as Caddy
// drops them, before routing and before anything reaches an origin.
func CGIAlias(name string) bool {
	return strings.IndexByte(name, '_') >= 0 || strings.IndexByte(name, '.') >= 0
}

// DropCGIAliases removes the fields CGIAlias names from fs, in place, and
// returns what is left; fs itself when there are none, the common case.
func DropCGIAliases(fs []stream.Field) []stream.Field {
	i := 0
	for i < len(fs) && !CGIAlias(fs[i].Name) {
		i++
	}
	if i == len(fs) {
		return fs
	}
	kept := fs[:i]
	for _, f := range fs[i+1:] {
		if !CGIAlias(f.Name) {
			kept = append(kept, f)
		}
	}
	return kept
}

// HasToken reports whether a list field named name (lowercase) among fs
// holds token, compared without case (httpguts.HeaderValuesContainsToken's
// reading): "Vary: Accept-Encoding", "TE: trailers".
func HasToken(fs []stream.Field, name, token string) bool {
	for _, f := range fs {
		if f.Name != name {
			continue
		}
		for item := range strings.SplitSeq(f.Value, ",") {
			if strings.EqualFold(strings.TrimSpace(item), token) {
				return true
			}
		}
	}
	return false
}
