// Package polltest runs a test once per poller backend, so that every
// suite checks the same behaviour on epoll, kqueue, io_uring and poll alike.
//
// It does not import netpoll: netpoll's own in-package tests use it too,
// and a test of package netpoll cannot import a package that imports
// netpoll. Callers pass the backend list, normally netpoll.Available(),
// which leaves out the backends disabled through POLLPROXY_NO_<NAME>.
//
// polltest.go holds it all: ForEachBackend.
package polltest
