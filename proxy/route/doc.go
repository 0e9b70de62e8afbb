// Package route holds what a Caddyfile's routing compiles to: the Router
// that picks a site by host, request matchers (path, host, method, header,
// query, remote_ip, client_ip, not, CEL expressions), header operations
// with Caddy's syntax, placeholders, and the per-site route table that a
// loop evaluates for every request. The client-address rules (trusted
// proxies, Caddy's private_ranges, the client address a trusted proxy
// names) live here too, so that matching, the forwarded fields and the
// access log derive the client the same way.
//
// One job per file: router.go (host to site), route.go (the route
// table), match.go (matchers), expression.go (CEL), header.go (header
// operations), placeholder.go (placeholders), placeholdertable.go (the rest
// of Caddy's placeholder table: URI forms, the original request, TLS,
// time, system, vars and map), clientip.go (the client's
// address), ranges.go (IP ranges and private_ranges), basicauth.go (a
// request waiting for its password checks), files.go (the file matcher,
// and a request waiting for the disk), hold.go (what a waiting request
// holds), reenter.go (a request re-entering its routes), relay.go (a
// request answered first by another exchange), forwardauth.go,
// handleresponse.go (handle_response, intercept, copy_response) and
// errors.go (handle_errors, error), vars.go (the vars directive and the
// vars and vars_regexp matchers) and mapper.go (the map directive).
//
// Everything here is built once per (re)load and only read afterwards, so
// one compiled table is shared by every loop; what is per loop (the
// reverse proxies a table ends in, scratch space) lives in the Handler
// made for that loop. Evaluating a table allocates nothing unless a
// directive rewrites the path, edits response headers or encodes the
// response (one small wrapper per request), a CEL expression runs, or a
// file matcher asks about the disk.
package route
