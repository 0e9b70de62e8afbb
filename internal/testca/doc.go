// Package testca is a certificate authority for TLS tests: a CA of a
// test's own, or a server's own CA read from its storage, that issues
// client certificates (client_auth) and server certificates (an origin
// over TLS). It imports nothing of pollproxy, so the tests of any
// package can use it.
//
// testca.go holds CA, New, Load, Client and Server; testca_test.go
// checks that a client certificate verifies against its CA alone.
package testca
