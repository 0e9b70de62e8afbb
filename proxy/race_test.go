//go:build race

package proxy_test

// raceEnabled: the race detector makes every copied byte expensive, so the
// largest streaming tests use smaller bodies under it.
const raceEnabled = true
