// Package encodetest holds what the tests and benchmarks of encode share:
// the page its cost is measured at.
//
// page.go holds it all: Page.
package encodetest
