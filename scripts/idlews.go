//go:build ignore

// idlews is scripts/idle-ws's helper: a WebSocket echo origin, and a client
// that opens many WebSockets through pollproxy, exchanges one message on
// each and then holds them idle. It is not part of pollproxy; scripts/idle-ws
// builds it with `go build scripts/idlews.go`.
//
//	idlews origin ADDR
//	idlews client [-h2] -addr HOST:PORT -count N [-workers W]
//
// The client prints "ready N" on stdout once all N WebSockets echoed their
// message, then holds them until its stdin closes or it gets SIGTERM. Over
// HTTP/1.1 it uses coder/websocket (one TLS connection per WebSocket); with
// -h2 it speaks RFC 8441 with x/net's Framer, as many streams per TLS
// connection as the server's SETTINGS_MAX_CONCURRENT_STREAMS allows.
package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: idlews origin ADDR | idlews client [-h2] -addr HOST:PORT -count N")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "origin":
		if len(os.Args) != 3 {
			err = fmt.Errorf("usage: idlews origin ADDR")
			break
		}
		err = origin(os.Args[2])
	case "client":
		err = client(os.Args[2:])
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "idlews:", err)
		os.Exit(1)
	}
}

// origin echoes every message on every WebSocket until the peer closes.
func origin(addr string) error {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		ctx := context.Background()
		for {
			typ, msg, err := c.Read(ctx)
			if err != nil {
				return
			}
			if err := c.Write(ctx, typ, msg); err != nil {
				return
			}
		}
	})
	return http.ListenAndServe(addr, h)
}

func client(args []string) error {
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	addr := fs.String("addr", "", "pollproxy's address, 127.0.0.1:PORT")
	count := fs.Int("count", 10000, "WebSockets to open")
	workers := fs.Int("workers", 32, "handshakes in flight at once")
	useH2 := fs.Bool("h2", false, "RFC 8441 over HTTP/2 instead of HTTP/1.1 Upgrade")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *addr == "" || *count <= 0 {
		return fmt.Errorf("-addr and a positive -count are required")
	}
	var hold func()
	var err error
	if *useH2 {
		hold, err = openH2(*addr, *count)
	} else {
		hold, err = openH1(*addr, *count, *workers)
	}
	if err != nil {
		return err
	}
	fmt.Printf("ready %d\n", *count)
	done := make(chan struct{})
	go func() { io.Copy(io.Discard, os.Stdin); close(done) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case <-done:
	case <-sig:
	}
	hold()
	return nil
}

// openH1 opens count WebSockets over HTTP/1.1 Upgrade, one TLS connection
// each, and echoes one message on each.
func openH1(addr string, count, workers int) (func(), error) {
	tr := &http.Transport{
		TLSClientConfig:   &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}},
		DisableKeepAlives: true,
	}
	cl := &http.Client{Transport: tr}
	conns := make([]*websocket.Conn, count)
	var next atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= count {
					return
				}
				c, err := dialEcho(cl, addr, i)
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = fmt.Errorf("websocket %d: %w", i, err)
					}
					mu.Unlock()
					next.Store(int64(count))
					return
				}
				conns[i] = c
			}
		}()
	}
	wg.Wait()
	closeAll := func() {
		for _, c := range conns {
			if c != nil {
				c.CloseNow()
			}
		}
	}
	if firstErr != nil {
		closeAll()
		return nil, firstErr
	}
	return closeAll, nil
}

func dialEcho(cl *http.Client, addr string, i int) (*websocket.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "wss://"+addr+"/", &websocket.DialOptions{HTTPClient: cl})
	if err != nil {
		return nil, err
	}
	msg := []byte(fmt.Sprintf("hello %d", i))
	if err := c.Write(ctx, websocket.MessageText, msg); err != nil {
		c.CloseNow()
		return nil, err
	}
	_, got, err := c.Read(ctx)
	if err != nil {
		c.CloseNow()
		return nil, err
	}
	if !bytes.Equal(got, msg) {
		c.CloseNow()
		return nil, fmt.Errorf("echo %q, want %q", got, msg)
	}
	// Keep the connection read by a goroutine so a close from the
	// server is noticed, as a real client's would be.
	go func() {
		for {
			if _, _, err := c.Read(context.Background()); err != nil {
				return
			}
		}
	}()
	return c, nil
}

// h2conn is one TLS connection carrying RFC 8441 WebSockets.
type h2conn struct {
	c   *tls.Conn
	fr  *http2.Framer
	enc *hpack.Encoder
	buf bytes.Buffer
}

// openH2 opens count RFC 8441 WebSockets, filling each TLS connection up to
// the server's stream limit.
func openH2(addr string, count int) (func(), error) {
	var conns []*h2conn
	closeAll := func() {
		for _, hc := range conns {
			hc.c.Close()
		}
	}
	for opened := 0; opened < count; {
		hc, maxStreams, err := dialH2(addr)
		if err != nil {
			closeAll()
			return nil, err
		}
		conns = append(conns, hc)
		n := min(count-opened, maxStreams)
		if err := hc.openStreams(addr, n, opened); err != nil {
			closeAll()
			return nil, fmt.Errorf("connection %d: %w", len(conns), err)
		}
		opened += n
		// From now on the connection only answers PINGs.
		go hc.idle()
	}
	return closeAll, nil
}

func dialH2(addr string) (*h2conn, int, error) {
	d := &net.Dialer{Timeout: 10 * time.Second}
	c, err := tls.DialWithDialer(d, "tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		return nil, 0, err
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "h2" {
		c.Close()
		return nil, 0, fmt.Errorf("ALPN %q, want h2", p)
	}
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		c.Close()
		return nil, 0, err
	}
	hc := &h2conn{c: c, fr: http2.NewFramer(c, c)}
	hc.enc = hpack.NewEncoder(&hc.buf)
	hc.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	if err := hc.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}); err != nil {
		c.Close()
		return nil, 0, err
	}
	maxStreams, extended := 100, false
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			c.Close()
			return nil, 0, err
		}
		sf, ok := f.(*http2.SettingsFrame)
		if !ok || sf.IsAck() {
			continue
		}
		sf.ForeachSetting(func(s http2.Setting) error {
			switch s.ID {
			case http2.SettingMaxConcurrentStreams:
				maxStreams = int(s.Val)
			case http2.SettingEnableConnectProtocol:
				extended = s.Val == 1
			}
			return nil
		})
		if err := hc.fr.WriteSettingsAck(); err != nil {
			c.Close()
			return nil, 0, err
		}
		break
	}
	if !extended {
		c.Close()
		return nil, 0, fmt.Errorf("server does not offer SETTINGS_ENABLE_CONNECT_PROTOCOL")
	}
	return hc, maxStreams, nil
}

// openStreams opens n extended CONNECT streams, sends one masked text
// frame on each once its 200 arrives, and waits for every echo.
func (hc *h2conn) openStreams(addr string, n, base int) error {
	want := map[uint32][]byte{}
	for k := 0; k < n; k++ {
		id := uint32(2*k + 1)
		hc.buf.Reset()
		for _, f := range [][2]string{
			{":method", "CONNECT"}, {":protocol", "websocket"}, {":scheme", "https"},
			{":path", "/"}, {":authority", addr}, {"sec-websocket-version", "13"},
		} {
			hc.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
		}
		if err := hc.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hc.buf.Bytes(), EndHeaders: true}); err != nil {
			return err
		}
		want[id] = []byte(fmt.Sprintf("hello %d", base+k))
	}
	echoed := 0
	for echoed < n {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			return err
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if st := f.PseudoValue("status"); st != "200" {
				return fmt.Errorf("stream %d: status %s", f.StreamID, st)
			}
			if err := hc.fr.WriteData(f.StreamID, false, maskedText(want[f.StreamID])); err != nil {
				return err
			}
		case *http2.DataFrame:
			msg, ok := want[f.StreamID]
			if !ok {
				return fmt.Errorf("DATA on unknown stream %d", f.StreamID)
			}
			got := f.Data()
			exp := append([]byte{0x81, byte(len(msg))}, msg...)
			if !bytes.Equal(got, exp) {
				return fmt.Errorf("stream %d: echo %q, want %q", f.StreamID, got, exp)
			}
			echoed++
			if err := hc.fr.WriteWindowUpdate(0, uint32(len(got))); err != nil {
				return err
			}
		case *http2.RSTStreamFrame:
			return fmt.Errorf("stream %d reset: %v", f.StreamID, f.ErrCode)
		case *http2.GoAwayFrame:
			return fmt.Errorf("GOAWAY %v", f.ErrCode)
		case *http2.PingFrame:
			if !f.IsAck() {
				hc.fr.WritePing(true, f.Data)
			}
		}
	}
	hc.c.SetDeadline(time.Time{})
	return nil
}

// idle reads the connection until it ends, answering PINGs.
func (hc *h2conn) idle() {
	for {
		f, err := hc.fr.ReadFrame()
		if err != nil {
			return
		}
		if p, ok := f.(*http2.PingFrame); ok && !p.IsAck() {
			hc.fr.WritePing(true, p.Data)
		}
	}
}

// maskedText is one client WebSocket text frame (RFC 6455 5.2) carrying
// msg, which must be shorter than 126 bytes.
func maskedText(msg []byte) []byte {
	key := [4]byte{0x12, 0x34, 0x56, 0x78}
	out := append([]byte{0x81, 0x80 | byte(len(msg))}, key[:]...)
	for i, b := range msg {
		out = append(out, b^key[i%4])
	}
	return out
}
