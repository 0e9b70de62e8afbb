// Package encode is Caddy's encode directive for pollproxy: responses
// compressed with gzip or zstd (github.com/klauspost/compress) on the
// loop, as they stream.
//
// A Writer stands between a handler and the front end's
// stream.ResponseWriter. It decides from the response head (and, when
// the length is unknown, from the first body bytes) whether to encode,
// with Caddy's rules: the client's Accept-Encoding q-values, then the
// order the directive gives; only responses longer than minimum_length
// and matched by match (by default Caddy's list of compressible
// Content-Types); never an already encoded response, a 206, a tunnel, or
// one whose Cache-Control says no-transform. Encoding removes
// Content-Length and Accept-Ranges, sets Content-Encoding, adds
// Vary: Accept-Encoding and marks a strong ETag with the encoding
// ("abc-gzip"), which the If-None-Match of a later request loses again
// before the handler sees it.
//
// Memory is bounded per stream: an encoder's state (about 1 MiB for
// gzip at level 5, 1.5 MiB for zstd with its 64 KiB window) and the
// compressed bytes of at most one slice of input that the client has not
// taken yet. The Writer takes no more input while those wait, so a slow
// client stops the handler, and the proxy stops reading its origin, as it
// does without encode. Encoders and output buffers are reused through a
// Pool, one per loop, which takes no lock.
//
// One job per file: encode.go (the directive and the choice of
// encoding), writer.go (the Writer), pool.go (a loop's encoders).
package encode
