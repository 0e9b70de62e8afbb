// Package phpfpmtest starts a real php-fpm for tests: a php-fpm.conf
// written in a temporary directory, one pool on a unix socket and one on
// a loopback TCP port, run in the foreground and stopped by its PID. A
// test asks for the program through testenv.Tool (scripts/test-tools
// names its Debian package).
//
// phpfpm.go holds it all: Start, Server (Restart, Stop) and Site, which
// writes a document root php-fpm's workers can read.
package phpfpmtest
