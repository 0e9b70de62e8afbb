package route

// The rest of Caddy's placeholder table: the request's URI in its other
// forms, the request as the client sent it, its duration and identifier,
// its TLS, the system and the clock, the variables the vars and map
// directives set, and the stop a shutdown_delay holds back. Each is filled as Caddy's replacer fills it
// (modules/caddyhttp/replacer.go and the global ones of caddy's
// replacer.go).

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

// systemValue is a system.* placeholder's value, read at load: none of
// them changes under a running process.
func systemValue(name string) (string, bool) {
	switch name {
	case "system.hostname":
		h, _ := os.Hostname()
		return h, true
	case "system.slash":
		return string(filepath.Separator), true
	case "system.os":
		return runtime.GOOS, true
	case "system.arch":
		return runtime.GOARCH, true
	case "system.wd":
		wd, _ := os.Getwd()
		return wd, true
	}
	return "", false
}

// timeFormats are the time.now placeholders and how each writes the
// time.
var timeFormats = map[string]bool{"time.now": true, "time.now.http": true, "time.now.rfc3339": true,
	"time.now.common_log": true, "time.now.year": true, "time.now.unix": true, "time.now.unix_ms": true}

// tlsFields are the {http.request.tls.*} fields of the connection; the
// client certificate's are clientcert.go's.
var tlsFields = map[string]bool{"version": true, "cipher_suite": true, "resumed": true, "proto": true,
	"proto_mutual": true, "server_name": true, "ech": true}

// tlsShorthands are the Caddyfile's shorthands for them.
var tlsShorthands = map[string]string{"tls_cipher": "cipher_suite", "tls_version": "version",
	"tls_client_fingerprint": "client.fingerprint", "tls_client_issuer": "client.issuer",
	"tls_client_serial": "client.serial", "tls_client_subject": "client.subject",
	"tls_client_certificate_pem":        "client.certificate_pem",
	"tls_client_certificate_der_base64": "client.certificate_der_base64"}

// tablePart compiles a placeholder of the rest of Caddy's table that
// takes an argument or a family of names.
func tablePart(name string, opt TemplateOptions) (part, bool) {
	if timeFormats[name] {
		return part{kind: phTimeNow, text: name}, true
	}
	if f, ok := tlsShorthands[name]; ok {
		return part{kind: phTLS, text: f}, true
	}
	if f, ok := strings.CutPrefix(name, "http.request.tls."); ok && (tlsFields[strings.ToLower(f)] || clientField(strings.ToLower(f))) {
		return part{kind: phTLS, text: strings.ToLower(f)}, true
	}
	for _, prefix := range [...]string{"vars.", "http.vars."} {
		if v, ok := strings.CutPrefix(name, prefix); ok && v != "" {
			return part{kind: phVar, text: v}, true
		}
	}
	for _, prefix := range [...]string{"file_match.", "http.matchers.file."} {
		switch f, _ := strings.CutPrefix(name, prefix); f {
		case "relative", "absolute", "type", "remainder":
			if strings.HasPrefix(name, prefix) {
				return part{kind: phFileMatch, text: f}, true
			}
		}
	}
	if bits, ok := strings.CutPrefix(name, "http.request.remote.host/"); ok {
		return part{kind: phRemoteMask, text: bits}, true
	}
	if n, ok := strings.CutPrefix(name, "http.request.orig_uri.path."); ok {
		if i, err := strconv.Atoi(n); err == nil && i >= 0 {
			return part{kind: phOrigSegment, n: i}, true
		}
	}
	return part{}, false
}

// reserved reports whether name is in one of Caddy's namespaces: one
// pollproxy cannot fill is refused rather than written as is, since
// Caddy would fill it. Any other name is the user's own (a map
// directive's destination), which Caddy leaves alone when nothing
// defines it.
func reserved(name string) bool {
	for _, ns := range [...]string{"http.", "file.", "system.", "time.", "tls_", "upstream_", "re.", "rp.", "resp.", "err.", "file_match.", "labels.", "path.", "query.", "header.", "cookie.", "vars."} {
		if strings.HasPrefix(name, ns) {
			return true
		}
	}
	return false
}

// userName reports whether name can be a map directive's destination: a
// name, not JSON or other text between braces.
func userName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isIdent(c) && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// appendTable appends the value of a placeholder of placeholdertable.go.
func (p part) appendTable(dst []byte, r *stream.Request) []byte {
	switch p.kind {
	case phProto:
		dst = append(dst, r.Proto...)
	case phProtoName:
		if r.Proto == "HTTP/2.0" {
			dst = append(dst, "HTTP/2"...)
		} else {
			dst = append(dst, r.Proto...)
		}
	case phURIEscaped:
		dst = append(dst, url.QueryEscape(r.Path)...)
	case phPathEscaped:
		dst = append(dst, url.QueryEscape(PathOnly(r.Path))...)
	case phFile:
		_, f := path.Split(PathOnly(r.Path))
		dst = append(dst, f...)
	case phDir:
		d, _ := path.Split(PathOnly(r.Path))
		dst = append(dst, d...)
	case phFileBase:
		pa := PathOnly(r.Path)
		dst = append(dst, strings.TrimSuffix(path.Base(pa), path.Ext(pa))...)
	case phFileExt:
		dst = append(dst, path.Ext(PathOnly(r.Path))...)
	case phQueryEscaped:
		dst = append(dst, url.QueryEscape(QueryOnly(r.Path))...)
	case phPrefixedQuery:
		dst = appendPrefixedQuery(dst, r.Path)
	case phDuration:
		dst = append(dst, since(r).String()...)
	case phDurationMs:
		dst = strconv.AppendFloat(dst, since(r).Seconds()*1e3, 'f', -1, 64)
	case phUUID:
		dst = append(dst, RequestUUID(r)...)
	case phOrigMethod:
		dst = append(dst, origMethod(r)...)
	case phOrigURI:
		dst = append(dst, origURI(r)...)
	case phOrigPath:
		dst = append(dst, PathOnly(origURI(r))...)
	case phOrigFile:
		_, f := path.Split(PathOnly(origURI(r)))
		dst = append(dst, f...)
	case phOrigDir:
		d, _ := path.Split(PathOnly(origURI(r)))
		dst = append(dst, d...)
	case phOrigQuery:
		dst = append(dst, QueryOnly(origURI(r))...)
	case phOrigSegment:
		dst = append(dst, pathSegment(PathOnly(origURI(r)), p.n)...)
	case phRemoteMask:
		dst = appendRemoteMask(dst, r.RemoteAddr.Addr(), p.text)
	case phTLS:
		dst = appendTLS(dst, r.TLS, p.text)
	case phTimeNow:
		dst = appendNow(dst, time.Now(), p.text)
	case phShuttingDown:
		_, stopping := r.Shutdown.At()
		dst = strconv.AppendBool(dst, stopping)
	case phTimeUntilShutdown:
		// time.Until's Duration as Go writes it, unrounded, negative once
		// the delay is over; nothing while no stop is scheduled.
		if at, ok := r.Shutdown.At(); ok {
			dst = append(dst, time.Until(at).String()...)
		}
	case phVar:
		dst = appendVar(dst, r, p.text)
	case phFileMatch:
		if p.text == "remainder" {
			dst = append(dst, r.FileRemainder...) // what split_path left
		} else if f := r.File; f != nil {
			switch p.text {
			case "relative":
				dst = append(dst, f.Relative...)
			case "absolute":
				dst = append(dst, f.Absolute...)
			case "type":
				dst = append(dst, f.Type...)
			}
		}
	case phLocal, phLocalHost, phLocalPort:
		la, ok := r.Conn.(stream.LocalAddresser)
		if !ok {
			break
		}
		ap := la.LocalAddr()
		switch {
		case !ap.IsValid():
		case p.kind == phLocal:
			dst = ap.AppendTo(dst)
		case p.kind == phLocalHost:
			dst = ap.Addr().AppendTo(dst)
		default:
			dst = strconv.AppendUint(dst, uint64(ap.Port()), 10)
		}
	case phMapped:
		for _, m := range r.Mapped {
			if out, ok := m.AppendMapped(dst, p.text, r); ok {
				return out
			}
		}
		if p.n == 1 {
			dst = append(append(append(dst, '{'), p.text...), '}')
		}
	}
	return dst
}

func appendPrefixedQuery(dst []byte, target string) []byte {
	if q := QueryOnly(target); q != "" {
		dst = append(append(dst, '?'), q...)
	}
	return dst
}

// origURI is the request target as the client sent it.
func origURI(r *stream.Request) string {
	if r.OriginalPath != "" {
		return r.OriginalPath
	}
	return r.Path
}

func origMethod(r *stream.Request) string {
	if r.OriginalMethod != "" {
		return r.OriginalMethod
	}
	return r.Method
}

// since is how long the request has been in the routes.
func since(r *stream.Request) time.Duration {
	if r.Start.IsZero() {
		return 0
	}
	return time.Since(r.Start)
}

// RequestUUID is the request's identifier, a random (version 4) UUID
// made the first time something asks for it: Caddy's
// {http.request.uuid}.
func RequestUUID(r *stream.Request) string {
	if r.UUID == "" {
		var b [16]byte
		_, _ = rand.Read(b[:])
		b[6] = b[6]&0x0f | 0x40
		b[8] = b[8]&0x3f | 0x80
		var s [36]byte
		hex.Encode(s[0:8], b[0:4])
		s[8] = '-'
		hex.Encode(s[9:13], b[4:6])
		s[13] = '-'
		hex.Encode(s[14:18], b[6:8])
		s[18] = '-'
		hex.Encode(s[19:23], b[8:10])
		s[23] = '-'
		hex.Encode(s[24:], b[10:])
		r.UUID = string(s[:])
	}
	return r.UUID
}

// appendRemoteMask writes the client address's prefix of the bits "V4"
// or "V4,V6" name, as Caddy's {http.request.remote.host/V4,V6}: nothing
// when the bits are not a number the address family allows.
func appendRemoteMask(dst []byte, addr netip.Addr, bits string) []byte {
	v4, v6, both := strings.Cut(bits, ",")
	s := v4
	if addr.Is6() && both {
		s = v6
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return dst
	}
	pfx, err := addr.Prefix(n)
	if err != nil {
		return dst
	}
	return pfx.AppendTo(dst)
}

// tlsVersions are Caddy's names of the TLS versions.
var tlsVersions = map[uint16]string{tls.VersionTLS10: "tls1.0", tls.VersionTLS11: "tls1.1",
	tls.VersionTLS12: "tls1.2", tls.VersionTLS13: "tls1.3"}

// appendTLS writes a field of the connection's TLS; nothing over
// cleartext.
func appendTLS(dst []byte, st *stream.TLSState, field string) []byte {
	if st == nil {
		return dst
	}
	switch field {
	case "version":
		dst = append(dst, tlsVersions[st.Version]...)
	case "cipher_suite":
		dst = append(dst, tls.CipherSuiteName(st.CipherSuite)...)
	case "resumed":
		dst = strconv.AppendBool(dst, st.Resumed)
	case "proto":
		dst = append(dst, st.Proto...)
	case "proto_mutual":
		dst = append(dst, "true"...)
	case "server_name":
		dst = append(dst, st.ServerName...)
	case "ech":
		dst = strconv.AppendBool(dst, st.ECH)
	default:
		dst = appendClientCert(dst, st, field)
	}
	return dst
}

// appendNow writes the time now in the form the placeholder name says.
func appendNow(dst []byte, now time.Time, name string) []byte {
	switch name {
	case "time.now":
		dst = append(dst, now.String()...)
	case "time.now.http":
		dst = now.UTC().AppendFormat(dst, http.TimeFormat)
	case "time.now.rfc3339":
		dst = now.AppendFormat(dst, time.RFC3339)
	case "time.now.common_log":
		dst = now.AppendFormat(dst, "02/Jan/2006:15:04:05 -0700")
	case "time.now.year":
		dst = strconv.AppendInt(dst, int64(now.Year()), 10)
	case "time.now.unix":
		dst = strconv.AppendInt(dst, now.Unix(), 10)
	case "time.now.unix_ms":
		dst = strconv.AppendInt(dst, now.UnixNano()/int64(time.Millisecond), 10)
	}
	return dst
}

// appendVar writes the variable name the vars directive set (the
// client's address for client_ip, the root directive's root for root);
// nothing when unset.
func appendVar(dst []byte, r *stream.Request, name string) []byte {
	if v, ok := r.Var(name); ok {
		return append(dst, v...)
	}
	switch name {
	case "client_ip":
		return (part{kind: phClientIP}).append(dst, r)
	case "root": // the root directive's, as Caddy's root sets its variable
		return append(dst, r.Root...)
	}
	return dst
}

// Shorthand reports whether name is a Caddyfile shorthand ({host},
// {header.X} ...) rather than a name Caddy's replacer knows: what a
// template's placeholder function, which asks the replacer, does not
// fill.
func Shorthand(name string) bool { return LongName(name) != name }

// shorthandLong are the long names of the Caddyfile's shorthands, and
// shorthandLongPrefix of those that take an argument.
var shorthandLong = map[string]string{"host": "http.request.host", "hostport": "http.request.hostport",
	"port": "http.request.port", "orig_method": "http.request.orig_method", "orig_uri": "http.request.orig_uri",
	"orig_path": "http.request.orig_uri.path", "orig_dir": "http.request.orig_uri.path.dir",
	"orig_file": "http.request.orig_uri.path.file", "orig_query": "http.request.orig_uri.query",
	"orig_?query": "http.request.orig_uri.prefixed_query", "method": "http.request.method",
	"uri": "http.request.uri", "%uri": "http.request.uri_escaped", "path": "http.request.uri.path",
	"%path": "http.request.uri.path_escaped", "dir": "http.request.uri.path.dir",
	"file": "http.request.uri.path.file", "query": "http.request.uri.query",
	"%query": "http.request.uri.query_escaped", "?query": "http.request.uri.prefixed_query",
	"remote": "http.request.remote", "remote_host": "http.request.remote.host",
	"remote_port": "http.request.remote.port", "scheme": "http.request.scheme", "uuid": "http.request.uuid",
	"tls_cipher": "http.request.tls.cipher_suite", "tls_version": "http.request.tls.version",
	"tls_client_fingerprint": "http.request.tls.client.fingerprint", "tls_client_issuer": "http.request.tls.client.issuer",
	"tls_client_serial": "http.request.tls.client.serial", "tls_client_subject": "http.request.tls.client.subject",
	"tls_client_certificate_pem":        "http.request.tls.client.certificate_pem",
	"tls_client_certificate_der_base64": "http.request.tls.client.certificate_der_base64",
	"upstream_hostport":                 "http.reverse_proxy.upstream.hostport", "client_ip": "http.vars.client_ip"}

var shorthandLongPrefix = [][2]string{{"header.", "http.request.header."}, {"cookie.", "http.request.cookie."},
	{"labels.", "http.request.host.labels."}, {"path.", "http.request.uri.path."},
	{"file.", "http.request.uri.path.file."}, {"query.", "http.request.uri.query."}, {"re.", "http.regexp."},
	{"vars.", "http.vars."}, {"rp.", "http.reverse_proxy."}, {"resp.", "http.intercept."}, {"err.", "http.error."},
	{"file_match.", "http.matchers.file."}}

// LongName is the name Caddy's replacer knows a Caddyfile placeholder
// by: a shorthand's long form, any other name as it is.
func LongName(name string) string {
	if l, ok := shorthandLong[name]; ok {
		return l
	}
	for _, p := range shorthandLongPrefix {
		if rest, ok := strings.CutPrefix(name, p[0]); ok {
			return p[1] + rest
		}
	}
	return name
}
