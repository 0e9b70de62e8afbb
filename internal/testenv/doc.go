// Package testenv finds the programs that tests run beside pollproxy (real
// servers and clients: nginx, HAProxy, Redis, Chromium, curl, h2load…).
//
// A test that needs one asks Tool. On a developer's machine without it the
// test skips, saying which Debian package has it. Under scripts/test (and
// so in CI) a missing program fails the test instead: the environment
// variable Require is set there, after the script has checked that every
// program is installed, so a suite that needs a real server can never pass
// by quietly not running.
//
// testenv.go holds it all: Tool, Require, Required and Missing.
package testenv
