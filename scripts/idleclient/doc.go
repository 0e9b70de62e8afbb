// Command idleclient opens many TLS connections to a proxy on loopback, sends
// one request on each, keeps them all open and idle, and reports how much the
// proxy's resident memory (VmRSS of the PID it is given) grew per connection.
// scripts/idle runs it against pollproxy, nginx and HAProxy.
//
// It is bounded: at most -n connections (100,000 at most), the whole run
// within -deadline, and it exits (closing every connection) once it has
// measured.
//
// main.go holds all of it.
package main
