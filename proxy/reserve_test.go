package proxy

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestReserveAgainstModel: what waits in a backend connection's output
// survives reserve through random appends and partial writes, as a plain
// byte queue holds it; a buffer grows only when what waits does not fit
// in half of it, and then at least doubles; the written bytes are dropped
// whenever it moves.
func TestReserveAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var bc backendConn
	var model []byte // the bytes not yet written
	var next byte
	for step := 0; step < 20000; step++ {
		if rng.IntN(3) > 0 {
			n := rng.IntN(40000)
			if rng.IntN(20) == 0 {
				n = rng.IntN(1 << 20)
			}
			p := make([]byte, n)
			for i := range p {
				p[i] = next
				next++
			}
			oldCap, waiting := cap(bc.out), len(bc.out)-bc.outOff
			bc.reserve(n)
			switch {
			case cap(bc.out) != oldCap && cap(bc.out) < max(2*oldCap, waiting+n):
				t.Fatalf("step %d: grew from %d to %d for %d waiting and %d more", step, oldCap, cap(bc.out), waiting, n)
			case cap(bc.out) != oldCap && waiting+n <= oldCap/2:
				t.Fatalf("step %d: grew from %d with %d waiting and %d more: fits in half", step, oldCap, waiting, n)
			case cap(bc.out)-len(bc.out) < n:
				t.Fatalf("step %d: room for %d after reserve(%d)", step, cap(bc.out)-len(bc.out), n)
			}
			bc.out = append(bc.out, p...)
			model = append(model, p...)
		} else {
			// The origin's socket takes part of what waits.
			k := rng.IntN(len(bc.out) - bc.outOff + 1)
			bc.outOff += k
			model = model[k:]
			if bc.outOff == len(bc.out) {
				bc.out, bc.outOff = bc.out[:0], 0 // as flush leaves it
			}
		}
		if !bytes.Equal(bc.out[bc.outOff:], model) {
			t.Fatalf("step %d: %d bytes wait, want %d (or their contents differ)", step, len(bc.out)-bc.outOff, len(model))
		}
	}
}
