package streamtest

import (
	"slices"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
)

func TestClockFiresInOrder(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	var got []string
	var at []time.Duration
	rec := func(name string) func() {
		return func() { got = append(got, name); at = append(at, c.Now().Sub(start)) }
	}
	c.AfterFunc(30*time.Millisecond, rec("c"))
	c.AfterFunc(10*time.Millisecond, rec("a"))
	c.AfterFunc(10*time.Millisecond, rec("b")) // a tie: set after a
	stopped := c.AfterFunc(20*time.Millisecond, rec("stopped"))
	c.AfterFunc(5*time.Millisecond, func() {
		// Set from a callback and due within the same Advance.
		c.AfterFunc(10*time.Millisecond, rec("nested"))
	})
	if !stopped.Stop() || stopped.Stop() {
		t.Fatal("Stop reports true once, while pending")
	}
	if n := c.Pending(); n != 4 {
		t.Fatalf("Pending = %d, want 4", n)
	}
	steps := 0
	c.Advance(25*time.Millisecond, func(f func()) { steps++; f() })
	if want := []string{"a", "b", "nested"}; !slices.Equal(got, want) {
		t.Fatalf("fired %v, want %v", got, want)
	}
	if want := []time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 15 * time.Millisecond}; !slices.Equal(at, want) {
		t.Fatalf("fired at %v, want %v", at, want)
	}
	if steps != 4 || c.Now() != start.Add(25*time.Millisecond) {
		t.Fatalf("steps %d, now %v", steps, c.Now().Sub(start))
	}
	if next, ok := c.Next(); !ok || next != start.Add(30*time.Millisecond) {
		t.Fatalf("Next = %v, %v", next, ok)
	}
	c.Advance(5*time.Millisecond, nil)
	if c.Pending() != 0 || got[len(got)-1] != "c" {
		t.Fatalf("after the last deadline: pending %d, fired %v", c.Pending(), got)
	}
}

// TestClockReset: a timer re-armed with Reset fires once, at its new
// deadline, whether it was pending, stopped or had fired.
func TestClockReset(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	var at []time.Duration
	tm := c.AfterFunc(10*time.Millisecond, func() { at = append(at, c.Now().Sub(start)) }).(stream.ResettableTimer)
	if !tm.Reset(20 * time.Millisecond) { // pending: moved
		t.Fatal("Reset of a pending timer reports false")
	}
	c.Advance(30*time.Millisecond, nil) // fires at 20
	if tm.Reset(5 * time.Millisecond) { // fired: armed again, at 35
		t.Fatal("Reset of a fired timer reports true")
	}
	tm.Stop()
	tm.Reset(10 * time.Millisecond) // stopped (still listed): armed once, at 40
	if n := c.Pending(); n != 1 {
		t.Fatalf("Pending = %d after stop and reset, want 1", n)
	}
	c.Advance(20*time.Millisecond, nil)
	if want := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond}; !slices.Equal(at, want) {
		t.Fatalf("fired at %v, want %v", at, want)
	}
}
