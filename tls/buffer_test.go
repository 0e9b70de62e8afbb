package tls

import "testing"

func TestBufferReuse(t *testing.T) {
	var q buffer
	q.write(make([]byte, 1000))
	c := cap(q.b)
	q.consume(600)
	q.consume(400)
	if q.len() != 0 || cap(q.b) != c || len(q.b) != 0 {
		t.Fatalf("emptied buffer: len %d cap %d (was %d)", len(q.b), cap(q.b), c)
	}
	// Compaction: the unconsumed tail moves to the front.
	q.write([]byte("0123456789"))
	q.consume(6)
	if string(q.bytes()) != "6789" || q.off != 0 {
		t.Fatalf("after compaction: %q off %d", q.bytes(), q.off)
	}
	q.consume(4)
	// A big buffer survives a run of big fills (a download), and big
	// fills mixed with small ones (many streams answered per batch); it
	// is released once keepBigFills small fills in a row did not need it.
	q.write(make([]byte, 1<<20))
	q.consume(1 << 20)
	big := cap(q.b)
	q.write(make([]byte, 1<<20))
	q.consume(1 << 20)
	if cap(q.b) != big {
		t.Fatalf("big buffer reallocated between big fills: cap %d, was %d", cap(q.b), big)
	}
	for round := range 3 {
		for range keepBigFills - 1 {
			q.write([]byte("small"))
			q.consume(5)
		}
		q.write(make([]byte, 2*idleBufferCap))
		q.consume(2 * idleBufferCap)
		if cap(q.b) != big {
			t.Fatalf("round %d: big buffer released among big fills: cap %d", round, cap(q.b))
		}
	}
	for i := range keepBigFills {
		if cap(q.b) != big {
			t.Fatalf("big buffer released after %d small fills, want %d", i, keepBigFills)
		}
		q.write([]byte("small"))
		q.consume(5)
	}
	if cap(q.b) != 0 {
		t.Fatalf("big buffer kept after %d small fills: cap %d", keepBigFills, cap(q.b))
	}
	// bytes() is capped, so appending to it cannot scribble on the queue.
	q.write([]byte("abc"))
	if b := q.bytes(); cap(b) != len(b) {
		t.Fatalf("bytes() cap %d len %d", cap(b), len(b))
	}
	defer func() {
		if recover() == nil {
			t.Fatal("over-consume did not panic")
		}
	}()
	q.consume(4)
}
