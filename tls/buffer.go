package tls

// idleBufferCap is the largest buffer capacity a Session keeps once a
// buffer has been emptied; bigger buffers are released so that an idle
// connection does not pin the memory of its last large transfer. It fits
// two full-size TLS records.
const idleBufferCap = 2 * (16<<10 + 512)

// buffer is a byte queue that reuses its memory: bytes are appended at the
// end and consumed from the front. Appending never moves bytes already
// queued, so a slice returned by bytes stays intact until the next consume.
type buffer struct {
	b     []byte
	off   int
	peak  int // most bytes queued since the buffer was last empty
	small int // fills in a row that a big buffer did not need
}

// keepBigFills is how many fills in a row must fit in idleBufferCap before
// a big buffer is released. Many streams answered in one batch (h2 with a
// hundred requests in flight) alternate big and small fills; releasing at
// the first small one made the next big one grow a buffer again, garbage
// on every request (docs/performance.md has how much). An idle
// connection's buffer goes with the idle sweep (ReleaseIdle) whatever this
// count.
const keepBigFills = 16

func (q *buffer) len() int { return len(q.b) - q.off }

func (q *buffer) bytes() []byte { return q.b[q.off:len(q.b):len(q.b)] }

func (q *buffer) write(p []byte) {
	q.b = append(q.b, p...)
	q.peak = max(q.peak, q.len())
}

func (q *buffer) consume(n int) {
	if n < 0 || n > q.len() {
		panic("tls: Consume beyond the buffered output")
	}
	q.off += n
	rest := len(q.b) - q.off
	switch {
	case rest == 0:
		// A big buffer goes once keepBigFills fills in a row did not need
		// it: a stream of large writes keeps it (dropping it after each
		// one made every 256 KiB flush allocate and clear anew), and so do
		// big batches mixed with small ones, while a connection back to
		// small exchanges releases it.
		q.b = q.b[:0]
		if cap(q.b) > idleBufferCap {
			if q.peak > idleBufferCap {
				q.small = 0
			} else if q.small++; q.small >= keepBigFills {
				q.b, q.small = nil, 0
			}
		}
		q.off, q.peak = 0, 0
	case q.off >= rest:
		// Compact: moving rest bytes costs no more than the off bytes
		// already consumed, so copying stays linear overall.
		copy(q.b, q.b[q.off:])
		q.b = q.b[:rest]
		q.off = 0
	}
}

func (q *buffer) release() {
	q.b = nil
	q.off, q.peak, q.small = 0, 0, 0
}
