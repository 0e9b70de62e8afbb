// Package atrest reads pollproxy's gauges from a /metrics scrape and says
// which are not at rest: what a test or a soak checks once its traffic
// has stopped.
//
// gauges.go holds it all: Parse, the Gauges it returns, and NotAtRest with
// the AtStart and NotCounts tables.
package atrest
