// Package redistest runs a real redis-server for tests: on a loopback
// port, with its own data directory, persisting every write (appendonly,
// fsync always) so that a restart loses nothing. Tests that need it are
// skipped, with a message saying so, where redis-server is not installed
// (Debian: apt-get install redis-server).
//
// redistest.go holds it all: Server, with Start, Stop, Restart and Dir.
package redistest
