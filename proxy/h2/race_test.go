//go:build race

package h2

// raceEnabled: the race detector changes what an allocation takes from the
// heap, so tests that count allocation classes skip under it.
const raceEnabled = true
