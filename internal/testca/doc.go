// Package testca is a certificate authority for tests of client
// certificates (client_auth): a CA of its own that issues client
// certificates, each test making its own. It imports nothing of
// pollproxy, so the tests of any package can use it.
//
// testca.go holds CA, New and Client; testca_test.go checks that a
// client certificate verifies against its CA alone.
package testca
