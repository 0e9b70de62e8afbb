// Package field is the one place for pollproxy's HTTP field rules: which
// fields belong to one connection and never cross the proxy, which ones a
// front end or the request translation owns, which ones may not travel in
// trailers, what a field name, a field value and a method may contain, and
// how a Content-Length is read.
//
// Every parser and writer in proxy/h1, proxy/h2 and the h2→h1 translation
// asks this package, so that what one side accepts and what the other side
// writes cannot drift apart: a field the two ends of the proxy read
// differently is a request smuggling vector. The rules follow
//
//   - RFC 9110 (HTTP Semantics): §5.1 field names, §5.5 field values,
//     §5.6.2 tokens, §6.5.1 trailer limitations, §7.6.1 Connection and
//     hop-by-hop fields, §7.6.3 Via, §8.6 Content-Length, §9.1 methods.
//   - RFC 9112 (HTTP/1.1): §6 message body framing.
//   - RFC 9113 (HTTP/2): §8.2.1 field validity, §8.2.2 connection-specific
//     fields.
//   - RFC 3986 (URI): §3.2 authority, §3.3 path characters.
//
// Lookups run per field per request, so they cost one switch on the
// lowercase name (Lookup) or one table load per byte (the validators), and
// never allocate.
//
// field.go holds it all: the table of Rules (Lookup, Has), the token, value,
// name, path and authority validators, ParseContentLength, UpgradeToken and
// the CGI alias rule.
package field
