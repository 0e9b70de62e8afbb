// Package route holds the compiled, read-only vocabulary of a Caddyfile's
// routing: the Router that picks a site by host, request matchers (path,
// host, method, header, query, remote_ip, client_ip, not, CEL
// expressions), response matchers, header operations with Caddy's syntax,
// placeholders, rewrite targets, Caddy's uri query edits, and the
// client-address rules (trusted proxies, Caddy's private_ranges, the
// client address a trusted proxy names), so that matching, the forwarded
// fields and the access log derive the client the same way.
//
// One job per file: router.go (host to site), match.go (request
// matchers and the Ctx they read), expression.go (CEL), respmatch.go
// (response matchers), header.go (header operations), placeholder.go
// (placeholders), placeholdertable.go (the rest of Caddy's placeholder
// table: URI forms, the original request, TLS, time, system, vars,
// map and a scheduled stop), clientcert.go (the client certificate's placeholders), vars.go
// (the vars directive's operations and the vars and vars_regexp
// matchers), mapper.go (the map directive's placeholders),
// rewritetarget.go (the target a rewrite builds), uriquery.go (uri
// query edits), query.go (reading a query as Caddy does), cookie.go
// (reading a cookie as Caddy does), clientip.go (the client's address, leftmost or by trusted_proxies_strict)
// and ranges.go (IP ranges and private_ranges).
//
// Everything here is built once per (re)load and only read afterwards,
// so it is shared by every loop. What a request does on a loop, the
// route table, its evaluation and the requests that wait or re-enter,
// is proxy/site's; route imports none of the packages that work (auth,
// encode, fileserver, observe), and a test keeps it so.
package route
