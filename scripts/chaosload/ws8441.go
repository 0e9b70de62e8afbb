package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"time"
)

// h2WebSocket is a WebSocket over an RFC 8441 extended CONNECT stream,
// framed here: the client's masked binary frames out, the origin's
// unmasked ones back (no extension was offered, so none is in use).
type h2WebSocket struct {
	out    *io.PipeWriter
	in     *bufio.Reader
	body   io.Closer
	cancel context.CancelFunc // the stream's context: its end
}

// dialH2WebSocket opens url with c, an x/net h2 client; it returns the
// stream and the origin that answered.
func dialH2WebSocket(c *http.Client, url string, timeout time.Duration) (*h2WebSocket, string, error) {
	pr, pw := io.Pipe()
	// The stream lives as long as its request's context: a timeout for
	// the dial alone is a timer that cancels it, stopped once answered.
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "CONNECT", url, pr)
	req.Header.Set(":protocol", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	var resp *http.Response
	err := withTimeout(timeout, func() error {
		var err error
		resp, err = c.Do(req)
		return err
	}, cancel)
	if err != nil {
		cancel()
		pw.Close()
		return nil, "", err
	}
	origin := resp.Header.Get(originHeader)
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		pw.Close()
		return nil, origin, fmt.Errorf("extended CONNECT: %s", resp.Status)
	}
	return &h2WebSocket{out: pw, in: bufio.NewReader(resp.Body), body: resp.Body, cancel: cancel}, origin, nil
}

// withTimeout runs do; if it has not returned after timeout, it calls
// abort (which must make do return) and reports the timeout.
func withTimeout(timeout time.Duration, do func() error, abort func()) error {
	t := time.AfterFunc(timeout, abort)
	err := do()
	if !t.Stop() && err != nil {
		return fmt.Errorf("no answer within %v: %w", timeout, err)
	}
	return err
}

// echo sends msg as one binary frame and returns the frame that comes
// back.
func (ws *h2WebSocket) echo(msg []byte, timeout time.Duration) ([]byte, error) {
	var got []byte
	err := withTimeout(timeout, func() error {
		if _, err := ws.out.Write(maskedFrame(msg)); err != nil {
			return err
		}
		var err error
		got, err = readFrame(ws.in)
		return err
	}, ws.close)
	return got, err
}

// maskedFrame is msg as a client's final binary frame.
func maskedFrame(msg []byte) []byte {
	mask := [4]byte{0x37, 0xfa, 0x21, 0x3d}
	f := []byte{0x82}
	switch n := len(msg); {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 1<<16:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	f = append(f, mask[:]...)
	for i, b := range msg {
		f = append(f, b^mask[i%4])
	}
	return f
}

// readFrame reads one unmasked final binary frame.
func readFrame(r *bufio.Reader) ([]byte, error) {
	var head [2]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return nil, err
	}
	if head[0] != 0x82 || head[1]&0x80 != 0 {
		return nil, errCorrupt{fmt.Sprintf("frame header %#x %#x, want an unmasked final binary frame", head[0], head[1])}
	}
	n := uint64(head[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return nil, err
		}
		n = uint64(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(r, ext[:]); err != nil {
			return nil, err
		}
		n = binary.BigEndian.Uint64(ext[:])
	}
	if n > 1<<20 {
		return nil, errCorrupt{fmt.Sprintf("frame of %d bytes", n)}
	}
	b := make([]byte, n)
	_, err := io.ReadFull(r, b)
	return b, err
}

// close ends the stream from the client's side, both directions.
func (ws *h2WebSocket) close() {
	ws.out.Close()
	ws.body.Close()
	ws.cancel()
}
