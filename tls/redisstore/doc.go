// Package redisstore is a certmagic.Storage on Redis (or Valkey), so that
// several pollproxy instances share one ACME account, the certificates and
// their OCSP staples, the local CA and the locks that keep them from
// ordering the same certificate at once.
//
// # Layout
//
// Every key lives under one prefix (Options.KeyPrefix, "pollproxy" by
// default) written as a Redis hash tag, "{pollproxy}", so that all of them
// hash to one cluster slot and a transaction may touch several:
//
//	{P}:k:<key>    a hash: "v" the value, "t" the time it was stored (Unix ns)
//	{P}:index      a sorted set of every key, all with score 0, read by
//	               lexical range: directories, List and Exists on a prefix
//	{P}:lock:<n>   a lock: a random owner token, with a time to live
//
// A Store writes the hash and the index entry in one MULTI/EXEC, so a
// reader never sees one without the other.
//
// # Locks
//
// A lock is SET NX PX with a random owner token; only the owner can renew
// it (a script compares the token before PEXPIRE) or release it (a script
// compares before DEL). While a lock is held a goroutine renews it every
// third of Options.LockTTL, so an ACME order that takes long keeps it and a
// holder that dies (SIGKILL, power loss, a partition) loses it after
// LockTTL. RenewLockLease, which certmagic calls between retries of an
// order, lengthens the lease further. Lock waits by polling.
//
// # Failures
//
// Nothing here runs on an event loop: certmagic calls storage from its own
// goroutines and from TLS handshakes, which pollproxy runs on its
// handshake pool. When Redis cannot be reached (any command fails, or the
// periodic PING does) the storage logs one error, sets the
// pollproxy_storage_up gauge to 0 and counts the failure; it logs again
// when Redis answers. While it does not answer the health check PINGs
// every Options.DownInterval, so its return is noticed within about a
// second, and the functions registered with OnReachable then run: the
// certificate manager (tls/certs) uses that to load or obtain at once the
// certificates it could not while Redis was away. A lock whose lease cannot be renewed, or that was
// found taken by another owner, is logged and counted too.
//
// One job per file:
//
//   - redisstore.go: the Storage, its Options, the health check while
//     Redis is away, and certmagic's storage methods (Store, Load,
//     Delete, Exists, List, Stat).
//   - lock.go: the owner-token locks, their renewal and release.
//   - metrics.go: Redis's reachability (Up, Down) and the Prometheus
//     collector of it.
package redisstore
