// Package auth holds Caddy's basic_auth for pollproxy: the accounts of
// one directive with their bcrypt hashes, the Authorization field's
// credentials, and the Shared offload.Pool where the hash comparisons run.
//
// A bcrypt comparison costs tens of milliseconds by design, so it never
// runs on a loop: a loop hands it to the pool (offload.Do), and the worker
// posts the answer back through the loop's task queue, as a TLS handshake
// does.
// What a loop keeps for itself — the Cache of credentials it has already
// seen pass — is used by that loop alone and takes no lock.
//
// One job per file: basicauth.go (accounts, realm, credentials),
// hash.go (the hash forms Caddy accepts and prints), pool.go (the shared pool and its size),
// cache.go (a loop's good credentials).
package auth
