package servertest

import (
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// relayChunk is the largest read a DelayRelay delays as one piece.
const relayChunk = 64 << 10

// DelayRelay is a TCP relay on loopback that delays every chunk it
// forwards by a fixed time in each direction: a long path without netem.
// Each direction has a reader that stamps every chunk with the time it
// arrived and a writer that delivers it at that time plus the delay, so the
// delays overlap (order and bandwidth are kept, only latency is added) and
// a round trip through the relay takes twice the delay. What a direction
// holds is bounded (MaxInFlight): past it the reader stops, which the
// sender sees as a path that takes no more bytes in flight. With SetRate
// it is also a link of that rate: each chunk leaves once the ones before it
// have, at the rate, and then takes the delay.
type DelayRelay struct {
	ln          net.Listener
	target      string
	delay       time.Duration
	rate        atomic.Int64 // bytes per second each way; 0: unlimited
	maxChunks   int
	bufs        sync.Pool
	wg          sync.WaitGroup
	mu          sync.Mutex
	conns       map[net.Conn]struct{}
	closed      bool
	acceptEnded chan struct{}
}

// NewDelayRelay listens on addr (a loopback address; port 0 picks one) and
// relays each connection to target, delaying every chunk by delay each
// way and holding at most maxInFlight bytes per direction (0: 64 MiB).
func NewDelayRelay(addr, target string, delay time.Duration, maxInFlight int) (*DelayRelay, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("delay relay: %s is not a loopback address", addr)
	}
	if maxInFlight <= 0 {
		maxInFlight = 64 << 20
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &DelayRelay{
		ln:          ln,
		target:      target,
		delay:       delay,
		maxChunks:   max(1, maxInFlight/relayChunk),
		conns:       make(map[net.Conn]struct{}),
		acceptEnded: make(chan struct{}),
	}
	r.bufs.New = func() any { return new([relayChunk]byte) }
	go r.accept()
	return r, nil
}

// SetRate makes each direction a link of bytesPerSecond (0: unlimited,
// the default) for the connections accepted after it: a chunk is sent
// once the link has sent the chunks before it, taking its length at that
// rate, and arrives the delay after that. The sender sees a path whose
// bandwidth-delay product is the rate times the round trip, as a real
// long path has, rather than one as fast as loopback.
func (r *DelayRelay) SetRate(bytesPerSecond int64) { r.rate.Store(max(bytesPerSecond, 0)) }

// Addr is the relay's listening address, for the client.
func (r *DelayRelay) Addr() string { return r.ln.Addr().String() }

// Close stops listening, closes every relayed connection and waits for the
// relay's goroutines.
func (r *DelayRelay) Close() error {
	r.mu.Lock()
	r.closed = true
	for c := range r.conns {
		c.Close()
	}
	r.mu.Unlock()
	err := r.ln.Close()
	<-r.acceptEnded
	r.wg.Wait()
	return err
}

func (r *DelayRelay) accept() {
	defer close(r.acceptEnded)
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", r.target)
		if err != nil {
			client.Close()
			continue
		}
		if !r.track(client, server) {
			return
		}
		p := &relayPair{r: r, a: client, b: server}
		p.left.Store(2)
		r.wg.Add(4)
		go p.direction(client, server)
		go p.direction(server, client)
	}
}

// track records a connection pair so Close can end it; it reports false
// (closing them) once the relay is closed.
func (r *DelayRelay) track(cs ...net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		for _, c := range cs {
			c.Close()
		}
		return false
	}
	for _, c := range cs {
		r.conns[c] = struct{}{}
	}
	return true
}

// relayPair is one relayed connection: the client's side and the target's.
type relayPair struct {
	r    *DelayRelay
	a, b net.Conn
	left atomic.Int32 // directions still delivering
}

// close ends both sides.
func (p *relayPair) close() {
	p.r.mu.Lock()
	delete(p.r.conns, p.a)
	delete(p.r.conns, p.b)
	p.r.mu.Unlock()
	p.a.Close()
	p.b.Close()
}

// delayed is one chunk on its way: n bytes of buf, due at due; n == 0 is
// the sender's end of stream.
type delayed struct {
	buf *[relayChunk]byte
	n   int
	due time.Time
}

// direction relays from src to dst: a reader stamping chunks (here) and a
// writer delivering them when due.
func (p *relayPair) direction(src, dst net.Conn) {
	r := p.r
	q := make(chan delayed, r.maxChunks)
	go p.deliver(q, dst)
	defer r.wg.Done()
	defer close(q)
	rate := r.rate.Load()
	var linkFree time.Time // when the link has sent what it was given
	// sent is when a chunk of n bytes read now has left the link.
	sent := func(n int) time.Time {
		now := time.Now()
		if rate == 0 {
			return now
		}
		if linkFree.Before(now) {
			linkFree = now
		}
		linkFree = linkFree.Add(time.Duration(int64(n) * int64(time.Second) / rate))
		return linkFree
	}
	for {
		buf := r.bufs.Get().(*[relayChunk]byte)
		n, err := src.Read(buf[:])
		if n > 0 {
			q <- delayed{buf, n, sent(n).Add(r.delay)}
		} else {
			r.bufs.Put(buf)
		}
		if err != nil {
			q <- delayed{due: sent(0).Add(r.delay)}
			return
		}
	}
}

func (p *relayPair) deliver(q <-chan delayed, dst net.Conn) {
	r := p.r
	defer r.wg.Done()
	for d := range q {
		if wait := time.Until(d.due); wait > 0 {
			time.Sleep(wait)
		}
		if d.n == 0 {
			// The sender finished: carry the half-close, or end the pair
			// when it cannot be carried.
			if tc, ok := dst.(*net.TCPConn); !ok || tc.CloseWrite() != nil {
				p.close()
			}
			break
		}
		_, err := dst.Write(d.buf[:d.n])
		r.bufs.Put(d.buf)
		if err != nil {
			p.close() // the receiver is gone: stop the sender too
			break
		}
	}
	for d := range q { // what the reader still queues before it stops
		if d.buf != nil {
			r.bufs.Put(d.buf)
		}
	}
	if p.left.Add(-1) == 0 {
		p.close()
	}
}
