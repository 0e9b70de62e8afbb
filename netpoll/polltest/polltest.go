// Package polltest runs a test once per poller backend, so that every
// suite checks the same behaviour on epoll, kqueue, io_uring and poll alike.
//
// It does not import netpoll: netpoll's own in-package tests use it too,
// and a test of package netpoll cannot import a package that imports
// netpoll. Callers pass the backend list, normally netpoll.Available(),
// which leaves out the backends disabled through POLLPROXY_NO_<NAME>.
package polltest

import "testing"

// ForEachBackend runs f as one subtest per name in backends, named after
// the backend, in order. It fails t when backends is empty: a suite that
// ran on no backend proved nothing.
func ForEachBackend(t *testing.T, backends []string, f func(t *testing.T, backend string)) {
	t.Helper()
	if len(backends) == 0 {
		t.Fatal("no poller backend available")
	}
	for _, name := range backends {
		t.Run(name, func(t *testing.T) { f(t, name) })
	}
}
