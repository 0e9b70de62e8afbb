// Package acmetest runs Pebble, the ACME test CA (a tool dependency in
// go.mod), for tests that obtain certificates over real validations.
//
// pebble.go holds it all: Pebble, started by Start, with its IssuingRoot,
// Orders and Log.
package acmetest
