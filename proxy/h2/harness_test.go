package h2

import (
	"math/rand"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/proxy/stream"
	"github.com/pollproxy/pollproxy/proxy/stream/streamtest"
)

// The harness stands in for the event loop: one mutex plays the loop, so
// Feed, transport callbacks, timers and handler calls never run at once.
// Every stretch of work under the mutex is one loop iteration: it ends with
// the transport's EndStep, which calls Flush when the front end asked for
// it, as the real connection does before it writes the socket, and then
// OnDrained when that left nothing queued. The transport is streamtest's,
// its time a manual clock that moves only when a test advances it; the
// harness adds a real connection that a writer and a reader goroutine
// pump under the mutex.

type testTransport struct {
	*streamtest.Transport
	mu      *sync.Mutex
	cond    *sync.Cond // signalled when output is queued or the transport closes
	conn    net.Conn
	sc      *ServerConn
	wake    chan struct{} // signalled when a timer is set (autoAdvance)
	feedErr error
	done    chan struct{}
}

// writer moves queued output to the socket outside of the lock.
func (t *testTransport) writer() {
	defer close(t.done)
	t.mu.Lock()
	for {
		for len(t.Pending) == 0 && !t.Closed {
			t.cond.Wait()
		}
		if len(t.Pending) == 0 && t.Closed {
			t.mu.Unlock()
			t.conn.Close()
			return
		}
		b := t.Pending
		t.Pending = nil
		t.InFlight = len(b)
		t.mu.Unlock()
		_, err := t.conn.Write(b)
		t.mu.Lock()
		t.InFlight = 0
		if err != nil {
			t.Closed = true
			t.sc.Abort(err)
			t.mu.Unlock()
			t.conn.Close()
			return
		}
		if !t.Closed && len(t.Pending) < 64<<10 {
			t.sc.OnDrained()
			t.EndStep()
		}
	}
}

// reader feeds the server in random pieces, to exercise every split.
func (t *testTransport) reader(splitMax int) {
	buf := make([]byte, 32<<10)
	rnd := rand.New(rand.NewSource(1))
	for {
		n, err := t.conn.Read(buf)
		t.mu.Lock()
		p := buf[:n]
		for len(p) > 0 && !t.Closed {
			k := len(p)
			if splitMax > 0 {
				k = min(k, 1+rnd.Intn(splitMax))
			}
			if ferr := t.sc.Feed(p[:k]); ferr != nil {
				t.feedErr = ferr
				t.mu.Unlock()
				return
			}
			p = p[k:]
		}
		t.EndStep()
		if err != nil {
			t.sc.Abort(err)
			t.Closed = true
			t.cond.Signal()
			t.mu.Unlock()
			return
		}
		t.mu.Unlock()
	}
}

type testServer struct {
	mu sync.Mutex
	tr *testTransport
	sc *ServerConn
}

// lock runs f on the "loop", as one iteration.
func (s *testServer) lock(f func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f()
	s.tr.EndStep()
}

// advance moves the manual clock by d on the "loop", firing every timer
// that falls due on the way, each as an iteration of its own.
func (s *testServer) advance(d time.Duration) {
	s.lock(func() { s.tr.Advance(d) })
}

// autoAdvance plays the passage of time for tests whose client blocks
// while the server's own timers must run (handlers that answer later):
// whenever a timer is set, a goroutine advances the manual clock to it and
// fires it, as long as it falls due within limit of the clock's time. The
// connection's own timeouts are longer than limit and never fire this way.
func (s *testServer) autoAdvance(t testing.TB, limit time.Duration) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			case <-s.tr.wake:
			}
			s.lock(func() {
				c := s.tr.Time
				for !s.tr.Closed {
					next, ok := c.Next()
					if !ok || next.Sub(c.Now()) > limit {
						return
					}
					s.tr.Advance(next.Sub(c.Now()))
				}
			})
		}
	}()
	t.Cleanup(func() {
		close(stop)
		<-done
	})
}

// memory reports the bytes the connection holds: input, output, stream
// buffers and what the transport has queued.
func (s *testServer) memory() (n int) {
	s.lock(func() { n = s.memLocked() })
	return n
}

func (s *testServer) memLocked() int {
	c := s.sc
	n := cap(c.in) + cap(c.out.b) + s.tr.Buffered()
	for _, st := range c.streams {
		n += cap(st.buf)
	}
	return n
}

// sampleMem records the largest memLocked seen in *m.
func (s *testServer) sampleMem(m *int) {
	s.lock(func() { *m = max(*m, s.memLocked()) })
}

// startServer serves h on one end of conn pair and returns the other end.
func startServer(t testing.TB, h stream.Handler, cfg Config, tcp bool, splitMax int) (net.Conn, *testServer) {
	t.Helper()
	return startServerRTT(t, h, cfg, tcp, splitMax, 0)
}

// startServerRTT is startServer over a transport whose handshake measured
// the round trip hsRTT (0: none).
func startServerRTT(t testing.TB, h stream.Handler, cfg Config, tcp bool, splitMax int, hsRTT time.Duration) (net.Conn, *testServer) {
	t.Helper()
	var client, server net.Conn
	if tcp {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ch := make(chan net.Conn, 1)
		go func() {
			c, err := ln.Accept()
			if err != nil {
				ch <- nil
				return
			}
			ch <- c
		}()
		client, err = net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		server = <-ch
		if server == nil {
			t.Fatal("accept failed")
		}
	} else {
		client, server = net.Pipe()
	}
	ts := &testServer{}
	tr := &testTransport{Transport: streamtest.NewTransport(), mu: &ts.mu, conn: server, wake: make(chan struct{}, 1), done: make(chan struct{})}
	tr.RTT = hsRTT
	tr.DrainedAfterFlush = true
	tr.Time.OnSet = func() {
		select {
		case tr.wake <- struct{}{}:
		default:
		}
	}
	tr.cond = sync.NewCond(&ts.mu)
	tr.OnWrite = func([]byte) { tr.cond.Signal() }
	tr.OnClose = tr.cond.Signal
	ts.tr = tr
	ts.mu.Lock()
	ts.sc = NewServerConn(tr, h, cfg)
	tr.sc, tr.Conn = ts.sc, ts.sc
	tr.EndStep()
	ts.mu.Unlock()
	go tr.writer()
	go tr.reader(splitMax)
	t.Cleanup(func() {
		client.Close()
		ts.lock(func() {
			tr.Closed = true
			tr.cond.Signal()
		})
		<-tr.done
	})
	return client, ts
}

// handlerFunc adapts a function to stream.Handler.
type handlerFunc func(req *stream.Request, w stream.ResponseWriter) stream.Events

func (f handlerFunc) Serve(req *stream.Request, w stream.ResponseWriter) stream.Events {
	return f(req, w)
}

// events adapts functions to stream.Events.
type events struct {
	body     func(p []byte)
	bodyEnd  func(trailers []stream.Field)
	writable func()
	abort    func(err error)
}

func (e *events) OnBody(p []byte) {
	if e.body != nil {
		e.body(p)
	}
}

func (e *events) OnBodyEnd(tr []stream.Field) {
	if e.bodyEnd != nil {
		e.bodyEnd(tr)
	}
}

func (e *events) OnWritable() {
	if e.writable != nil {
		e.writable()
	}
}

func (e *events) OnAbort(err error) {
	if e.abort != nil {
		e.abort(err)
	}
}

// bodySender writes body with backpressure, then closes with trailers.
type bodySender struct {
	w        stream.ResponseWriter
	body     []byte
	trailers []stream.Field
	done     bool
}

func (b *bodySender) pump() {
	for len(b.body) > 0 {
		n, err := b.w.Write(b.body)
		if err != nil {
			return
		}
		b.body = b.body[n:]
		if n == 0 {
			return
		}
	}
	if !b.done {
		b.done = true
		b.w.Close(b.trailers)
	}
}

// staticHandler answers every request with body.
func staticHandler(body []byte) stream.Handler {
	return handlerFunc(func(req *stream.Request, w stream.ResponseWriter) stream.Events {
		w.WriteHeader(200, []stream.Field{{Name: "content-type", Value: "text/plain"}}, false)
		bs := &bodySender{w: w, body: body}
		bs.pump()
		return &events{writable: bs.pump}
	})
}
