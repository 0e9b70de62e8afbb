// Package status holds the one table of HTTP reason phrases: the HTTP/1.1
// status line proxy/h1 writes and the {err.status_text} placeholder
// proxy/route fills both read it, so a status is named the same way
// wherever pollproxy names it, and as Caddy (through Go's net/http) names
// it.
//
// One job per file: text.go (the table and Text).
package status
