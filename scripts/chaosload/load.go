//lint:file-ignore SA1019 the h2 client is x/net's Transport: it speaks RFC 8441 extended CONNECT (a :protocol pseudo-header), the WebSockets over h2 this load opens.

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http2"
)

// load is the soak's clients: each kind of traffic in its own goroutines,
// until stop, every request and message recorded.
type load struct {
	base    string // https://127.0.0.1:PORT
	addr    string // 127.0.0.1:PORT
	tls     *tls.Config
	stop    time.Time
	timeout time.Duration // the most one request or message may take
	limit   time.Duration // what is reported while in flight (hung if its origin is up)
	onOld   func(f *flight)

	mu      sync.Mutex
	records []record
	closers []func()

	ids     atomic.Uint64
	flights sync.Map // *flight -> struct{}
}

// flight is a request or message under way.
type flight struct {
	id     uint64
	kind   string
	start  time.Time
	warned bool
}

func (l *load) id() uint64 { return l.ids.Add(1) }

// begin records that a request or message of kind for id starts now.
func (l *load) begin(id uint64, kind string) *flight {
	f := &flight{id: id, kind: kind, start: time.Now()}
	l.flights.Store(f, struct{}{})
	return f
}

// end records its outcome.
func (l *load) end(f *flight, origin string, err error, corrupt bool) {
	l.flights.Delete(f)
	r := record{ID: f.id, Kind: f.kind, Start: f.start, End: time.Now(), Origin: origin, Corrupt: corrupt}
	if err != nil {
		r.Err = err.Error()
	} else if corrupt {
		r.Err = "corrupt"
	}
	l.mu.Lock()
	l.records = append(l.records, r)
	l.mu.Unlock()
}

// watch reports, once each, the flights older than limit, until done.
func (l *load) watch(done <-chan struct{}) {
	every(500*time.Millisecond, done, func() {
		l.flights.Range(func(k, _ any) bool {
			if f := k.(*flight); !f.warned && time.Since(f.start) > l.limit {
				f.warned = true
				l.onOld(f)
			}
			return true
		})
	})
}

// every runs f every d until done is closed.
func every(d time.Duration, done <-chan struct{}, f func()) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		f()
	}
}

func (l *load) running() bool { return time.Now().Before(l.stop) }

func (l *load) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), l.timeout)
}

// h2 is an HTTP/2 client of its own connection (x/net's, which speaks RFC
// 8441 extended CONNECT).
func (l *load) h2() *http.Client {
	tr := &http2.Transport{
		TLSClientConfig: l.tls.Clone(),
		DialTLSContext: func(ctx context.Context, network, _ string, cfg *tls.Config) (net.Conn, error) {
			return (&tls.Dialer{Config: cfg}).DialContext(ctx, network, l.addr)
		},
	}
	l.closing(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// h1 is an HTTP/1.1 keep-alive client of at most one connection at a time.
func (l *load) h1() *http.Client {
	cfg := l.tls.Clone()
	cfg.NextProtos = []string{"http/1.1"}
	tr := &http.Transport{TLSClientConfig: cfg, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1,
		DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, network, l.addr)
		}}
	l.closing(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func (l *load) client(proto string) *http.Client {
	if proto == "h2" {
		return l.h2()
	}
	return l.h1()
}

func (l *load) closing(f func()) {
	l.mu.Lock()
	l.closers = append(l.closers, f)
	l.mu.Unlock()
}

// closeIdle closes every client's idle connections: the end of the load.
func (l *load) closeIdle() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.closers {
		f()
	}
}

// getSizes are the GETs' body sizes, small ones more often.
var getSizes = []int64{0, 100, 1 << 10, 1 << 10, 16 << 10, 16 << 10, 100 << 10, 1 << 20, 4 << 20}

// uploadSizes are the uploads'.
var uploadSizes = []int64{1 << 10, 64 << 10, 1 << 20, 4 << 20, 8 << 20}

// get fetches /get/ID/N with c and checks the body against the pattern,
// reading it through pace (nil: at full speed).
func (l *load) get(c *http.Client, kind string, n int64, pace func()) {
	id := l.id()
	f := l.begin(id, kind)
	ctx, cancel := l.ctx()
	defer cancel()
	origin, err := func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/get/%d/%d", l.base, id, n), nil)
		resp, origin, err := do(c, req)
		if err != nil {
			return origin, err
		}
		defer resp.Body.Close()
		h := sha256.New()
		var got int64
		if pace == nil {
			got, err = io.CopyBuffer(h, resp.Body, make([]byte, 32<<10))
		} else {
			buf := make([]byte, 4<<10)
			for err == nil {
				var k int
				k, err = io.ReadFull(resp.Body, buf)
				h.Write(buf[:k])
				got += int64(k)
				pace()
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				err = nil
			}
		}
		if err != nil {
			return origin, err
		}
		if want := patternSum(id, n); got != n || !bytes.Equal(h.Sum(nil), want[:]) {
			return origin, errCorrupt{fmt.Sprintf("body of %d bytes not the pattern of %d", got, n)}
		}
		return origin, nil
	}()
	l.finish(f, origin, err)
}

// do sends req with c: the response, and the origin that answered. A
// status other than 200 is an error.
func do(c *http.Client, req *http.Request) (*http.Response, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	origin := resp.Header.Get(originHeader)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, origin, fmt.Errorf("status %s", resp.Status)
	}
	return resp, origin, nil
}

// errCorrupt is a reply that came back whole but not as it should.
type errCorrupt struct{ what string }

func (e errCorrupt) Error() string { return e.what }

func (l *load) finish(f *flight, origin string, err error) {
	var c errCorrupt
	l.end(f, origin, err, errors.As(err, &c))
}

// upload posts n bytes of the pattern to /up/ID with c and checks the
// origin's SHA-256 of what it read. Half go with a length, half without
// (chunked in HTTP/1.1, open-ended in h2).
func (l *load) upload(c *http.Client, kind string, n int64) {
	id := l.id()
	f := l.begin(id, kind)
	ctx, cancel := l.ctx()
	defer cancel()
	origin, err := func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/up/%d", l.base, id), io.NopCloser(newPattern(id, n)))
		if id%2 == 0 {
			req.ContentLength = n
		}
		resp, origin, err := do(c, req)
		if err != nil {
			return origin, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<10))
		if err != nil {
			return origin, err
		}
		sum := patternSum(id, n)
		if want := fmt.Sprintf("%s %d", hex.EncodeToString(sum[:]), n); string(body) != want {
			return origin, errCorrupt{fmt.Sprintf("origin read %q, want %q", body, want)}
		}
		return origin, nil
	}()
	l.finish(f, origin, err)
}

// message is a WebSocket message's content: msg of session id.
func message(id uint64, msg int) []byte {
	b := make([]byte, 1+(id*7+uint64(msg)*131)%8192)
	io.ReadFull(newPattern(id<<20|uint64(msg), int64(len(b))), b)
	return b
}

// wsSession opens a WebSocket over HTTP/1.1 and echoes messages on it,
// 100 ms apart, until msgs went, it fails or the load stops.
func (l *load) wsSession(c *http.Client, msgs int) {
	id := l.id()
	f := l.begin(id, "ws h1 open")
	ctx, cancel := l.ctx()
	conn, resp, err := websocket.Dial(ctx, fmt.Sprintf("wss://%s/ws/%d", l.addr, id), &websocket.DialOptions{HTTPClient: c})
	cancel()
	origin := ""
	if resp != nil {
		origin = resp.Header.Get(originHeader)
	}
	l.finish(f, origin, err)
	if err != nil {
		return
	}
	defer conn.CloseNow()
	conn.SetReadLimit(1 << 20)
	for i := 0; i < msgs && l.running(); i++ {
		f := l.begin(id, "ws h1 message")
		err := func() error {
			ctx, cancel := l.ctx()
			defer cancel()
			want := message(id, i)
			if err := conn.Write(ctx, websocket.MessageBinary, want); err != nil {
				return err
			}
			_, got, err := conn.Read(ctx)
			if err == nil && !bytes.Equal(got, want) {
				return errCorrupt{fmt.Sprintf("message %d: %d bytes back, not the %d sent", i, len(got), len(want))}
			}
			return err
		}()
		l.finish(f, origin, err)
		if err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	conn.Close(websocket.StatusNormalClosure, "")
}

// wsH2Session is wsSession over an RFC 8441 stream.
func (l *load) wsH2Session(c *http.Client, msgs int) {
	id := l.id()
	f := l.begin(id, "ws h2 open")
	ws, origin, err := dialH2WebSocket(c, fmt.Sprintf("%s/ws/%d", l.base, id), l.timeout)
	l.finish(f, origin, err)
	if err != nil {
		return
	}
	defer ws.close()
	for i := 0; i < msgs && l.running(); i++ {
		f := l.begin(id, "ws h2 message")
		want := message(id, i)
		got, err := ws.echo(want, l.timeout)
		if err == nil && !bytes.Equal(got, want) {
			err = errCorrupt{fmt.Sprintf("message %d: %d bytes back, not the %d sent", i, len(got), len(want))}
		}
		l.finish(f, origin, err)
		if err != nil {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sse reads a stream of n events from /sse/ID/N, each event a message
// that must follow the one before.
func (l *load) sse(c *http.Client, proto string, n int) {
	id := l.id()
	f := l.begin(id, "sse "+proto)
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout+time.Duration(n)*50*time.Millisecond)
	defer cancel()
	origin, err := func() (string, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/sse/%d/%d", l.base, id, n), nil)
		resp, origin, err := do(c, req)
		if err != nil {
			return origin, err
		}
		defer resp.Body.Close()
		r := bufio.NewReader(resp.Body)
		for i := 0; i < n; i++ {
			ev := l.begin(id, "sse "+proto+" event")
			got, err := readEvent(r)
			if err == nil && got != fmt.Sprintf("id: %d\ndata: %d-%d\n", i, id, i) {
				err = errCorrupt{fmt.Sprintf("event %d: %q", i, got)}
			}
			l.finish(ev, origin, err)
			if err != nil {
				return origin, fmt.Errorf("event %d: %w", i, err)
			}
		}
		if _, err := r.ReadByte(); err != io.EOF {
			return origin, fmt.Errorf("after the last event: %v, want the end", err)
		}
		return origin, nil
	}()
	l.finish(f, origin, err)
}

// readEvent reads one event's lines, up to the blank line that ends it.
func readEvent(r *bufio.Reader) (string, error) {
	var b strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return b.String(), err
		}
		if line == "\n" {
			return b.String(), nil
		}
		b.WriteString(line)
	}
}

// idle makes a request, leaves its connection idle for idle, then makes
// another on it.
func (l *load) idle(proto string, idle time.Duration) {
	c := l.client(proto)
	l.get(c, "idle "+proto, 1<<10, nil)
	for end := time.Now().Add(idle); time.Now().Before(end) && l.running(); {
		time.Sleep(100 * time.Millisecond)
	}
	l.get(c, "idle "+proto, 1<<10, nil)
	c.CloseIdleConnections()
}

// slow reads 128 KiB at about 40 KiB/s: a client slower than pollproxy.
func (l *load) slow(c *http.Client, proto string) {
	l.get(c, "slow "+proto, 128<<10, func() { time.Sleep(100 * time.Millisecond) })
}

// run starts every kind of client, scale goroutines of each (twice that
// for h2 GETs), each with its own client, and returns when they all
// stopped.
func (l *load) run(scale int) {
	var wg sync.WaitGroup
	loop := func(n int, each func() func(i int)) {
		for w := 0; w < n*scale; w++ {
			body := each()
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; l.running(); i++ {
					body(i + w)
				}
			}()
		}
	}
	for _, proto := range []string{"h2", "h1"} {
		n := 1
		if proto == "h2" {
			n = 2
		}
		loop(n, func() func(int) {
			c := l.client(proto)
			return func(i int) { l.get(c, "get "+proto, getSizes[i%len(getSizes)], nil) }
		})
		loop(1, func() func(int) {
			c := l.client(proto)
			return func(i int) { l.upload(c, "upload "+proto, uploadSizes[i%len(uploadSizes)]) }
		})
		loop(1, func() func(int) {
			c := l.client(proto)
			return func(int) { l.sse(c, proto, 40) }
		})
		loop(1, func() func(int) {
			return func(i int) { l.idle(proto, time.Duration(3+i%5)*time.Second) }
		})
		loop(1, func() func(int) {
			c := l.client(proto)
			return func(int) { l.slow(c, proto) }
		})
	}
	loop(1, func() func(int) {
		c := l.h1()
		return func(int) { l.wsSession(c, 30) }
	})
	loop(1, func() func(int) {
		c := l.h2()
		return func(int) { l.wsH2Session(c, 30) }
	})
	wg.Wait()
}
