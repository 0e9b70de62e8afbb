// Package oracle holds pollproxy's differential tests against stock
// Caddy: the same Caddyfile served by Caddy (the version pinned in
// tools/caddy/go.mod, built once per test run) and by pollproxy on the
// same ports, the same requests sent to both over HTTP/1.1 and HTTP/2,
// the same recording origin behind both, and every answer compared:
// status, response fields, body, and what the origin received. Caddy's
// answer is the one pollproxy must give; what may differ, and why, is
// listed in docs/caddyfile.md ("Caddy as the oracle").
//
// The package has no code outside its tests.
package oracle
