// Package fileserver is Caddy's file_server for pollproxy: static files
// under a root, with index files, hidden files, precompressed sidecars,
// conditional requests and ranges, directory listings (browse), and the
// file matcher that try_files expands to.
//
// Nothing here touches the disk on a loop. Opening, stat and reading run
// in a bounded offload.Pool of goroutines (as nginx's thread pools), and each
// result comes back through the loop's task queue, as a TLS handshake or
// a password check does. A response reads its next chunk only when the
// client took the previous one, so a slow client holds one chunk of
// memory, never the file.
//
// A request path never leaves its root: it is cleaned as a rooted path
// first (no "..", no NUL or backslash), and on Linux the file is opened
// with openat2(RESOLVE_BENEATH), so a symbolic link that points out of
// the root (or is absolute) is refused by the kernel; elsewhere the path
// is resolved and checked before the open, and the opened file is
// checked to be the one resolved.
//
// One job per file: pool.go (the shared pool and its size), resolve.go (request path to
// file path, hidden files), open_linux.go (opening beneath the root with
// openat2, the root opened once for a batch of files, a link's target
// stat beneath it), open.go and open_other.go (the checked way,
// elsewhere), server.go (one file_server directive: what to answer, its
// redirects), browse.go (browse: a directory's listing, read, sorted and
// cut as Caddy's, its JSON), browsepage.go (the listing's HTML page and
// text/plain columns), conditional.go (validators, conditional requests,
// ranges), response.go (a response streamed on the loop), match.go (what
// the file matcher asks of the disk).
package fileserver
