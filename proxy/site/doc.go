// Package site runs a site's routes on a loop: the route table a
// Caddyfile's site compiles to (Table, Node), and the per-loop Handler
// that evaluates it for every request and holds the request wherever it
// must wait (for a password check, for the disk) or re-enter its routes
// (forward_auth, handle_response, intercept, handle_errors). Matchers,
// placeholders and header operations are proxy/route's; the work the
// routes end in is auth's, fileserver's, encode's and the reverse
// proxies'.
//
// One job per file: node.go (the table, its routes and the directive
// types a route runs, one per routing directive), handler.go (the
// Handler and evaluation), preset.go (the response fields immediate
// header edits set), files.go (the file matcher, its split_path, and a
// request waiting for the disk), basicauth.go (a request waiting for its password
// checks), hold.go (what a waiting request holds), reenter.go (a request
// re-entering its routes), relay.go (a request answered first by another
// exchange), forwardauth.go (forward_auth), handleresponse.go
// (handle_response, intercept, copy_response), errors.go (handle_errors,
// error), filecel.go (file() in expressions), templates.go (a response
// the templates directive renders in the file pool) and answerlog.go
// (the access log of the answers the routes make).
//
// A Table is built once per (re)load and only read afterwards, so one
// is shared by every loop; what is per loop (the reverse proxies a table
// ends in, the loop handle off-loop work posts back to, scratch space)
// lives in the Handler made for that loop. Evaluating a table allocates
// nothing unless a directive rewrites the path, edits response headers
// or encodes the response (one small wrapper per request), a CEL
// expression runs, or a file matcher asks about the disk.
package site
