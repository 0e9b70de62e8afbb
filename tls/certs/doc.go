// Package certs manages pollproxy's server certificates with certmagic:
// certificates from an ACME CA (obtained, stored and renewed), from
// pollproxy's local development CA (like Caddy's "tls internal"), and from
// certificate files, all served by SNI through Manager.TLSConfig.
//
// It is apart from package tls, the non-blocking session the loops run, so
// that certmagic and its dependencies stay off the hot path: nothing here
// runs on a loop. Certificate lookups happen in crypto/tls's GetCertificate,
// during a handshake, on the handshake pool's workers; issuance, renewal and
// storage run on certmagic's goroutines.
//
// Files: manager.go is the Manager and which names go to which policy;
// policy.go a Policy (Caddy's automation policy: issuers, key type,
// on-demand) and the certmagic configuration made from it; connpolicy.go
// connection policies (protocols, ciphers, curves, ALPN, client
// certificates) chosen by SNI; ondemand.go the permission asked before
// an on-demand certificate; certgetter.go the HTTP endpoint asked for a
// handshake's certificate (get_certificate http); localca.go the local CAs, certmagic Issuers
// kept in storage (Manager.CACertificates gives their roots and
// intermediates to trust pools);
// waitlist.go the names put aside while a shared storage does not answer;
// zaplog.go the bridge from certmagic's zap logs to log/slog.
package certs
