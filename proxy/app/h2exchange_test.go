package app

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// h2Conn is a client's h2c connection (prior knowledge) that writes
// frames with x/net/http2's Framer and checks each answer against RFC
// 9113 §8: x/net/http2 validates the field block (names, values,
// pseudo-fields), this checks the rest.
type h2Conn struct {
	c      net.Conn
	fr     *http2.Framer
	enc    *hpack.Encoder
	encBuf bytes.Buffer
	next   uint32 // the next stream's ID
	gone   bool   // GOAWAY or end of the connection: open a new one
	// maxFrame is the largest frame the server takes.
	maxFrame uint32
}

// errReset is a stream the server reset before a final answer: what
// abort does, and nothing else may.
var errReset = errors.New("stream reset before an answer")

// clientWindow is the receive window the client gives the server, per
// stream and for the connection: no answer in these tests needs more.
const clientWindow = 1 << 24

// dialH2 connects to addr; every exchange on the connection must end by
// deadline.
func dialH2(addr string, deadline time.Time) (*h2Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(deadline)
	h := &h2Conn{c: c, next: 1, maxFrame: 16384}
	h.fr = http2.NewFramer(c, c)
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.enc = hpack.NewEncoder(&h.encBuf)
	io.WriteString(c, http2.ClientPreface)
	if err := h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: clientWindow}); err != nil {
		c.Close()
		return nil, err
	}
	if err := h.fr.WriteWindowUpdate(0, clientWindow-65535); err != nil {
		c.Close()
		return nil, err
	}
	return h, nil
}

func (h *h2Conn) Close() error { return h.c.Close() }

// h2Answer is what one stream's answer was.
type h2Answer struct {
	status int
}

// roundTrip sends r on a new stream and reads its answer. A malformed
// answer is an error naming what is wrong; errReset when the stream (or
// the connection) ended before a final answer.
func (h *h2Conn) roundTrip(r fuzzRequest, authority string) (h2Answer, error) {
	id := h.next
	h.next += 2
	h.encBuf.Reset()
	write := func(name, value string) { h.enc.WriteField(hpack.HeaderField{Name: name, Value: value}) }
	write(":method", r.method)
	write(":scheme", "http")
	write(":authority", authority)
	write(":path", r.target)
	for _, f := range r.fields {
		write(f[0], f[1])
	}
	if len(r.body) > 0 && !r.noCL {
		write("content-length", strconv.Itoa(len(r.body)))
	}
	block := h.encBuf.Bytes()
	if err := h.writeHeaders(id, block, len(r.body) == 0); err != nil {
		return h2Answer{}, h.ended(err)
	}
	// The bodies are smaller than the protocol's initial windows.
	for rest := r.body; len(rest) > 0; {
		n := min(len(rest), int(h.maxFrame))
		if err := h.fr.WriteData(id, n == len(rest), rest[:n]); err != nil {
			return h2Answer{}, h.ended(err)
		}
		rest = rest[n:]
	}
	return h.readAnswer(id, r.method == "HEAD")
}

// writeHeaders writes a header block in HEADERS and as many CONTINUATION
// frames as it takes.
func (h *h2Conn) writeHeaders(id uint32, block []byte, end bool) error {
	n := min(len(block), int(h.maxFrame))
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block[:n], EndStream: end, EndHeaders: n == len(block)}); err != nil {
		return err
	}
	for block = block[n:]; len(block) > 0; block = block[n:] {
		n = min(len(block), int(h.maxFrame))
		if err := h.fr.WriteContinuation(id, n == len(block), block[:n]); err != nil {
			return err
		}
	}
	return nil
}

// ended turns the end of the connection into errReset.
func (h *h2Conn) ended(err error) error {
	h.gone = true
	if err == io.EOF || isReset(err) || errors.Is(err, net.ErrClosed) {
		return errReset
	}
	return err
}

// readAnswer reads frames until stream id ends, answering the
// connection's SETTINGS and PINGs on the way.
func (h *h2Conn) readAnswer(id uint32, head bool) (h2Answer, error) {
	var a h2Answer
	final := false
	cl, got := int64(-1), int64(0)
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			var se http2.StreamError
			if errors.As(err, &se) {
				return a, fmt.Errorf("malformed answer: %v", err)
			}
			if final {
				return a, fmt.Errorf("connection ended inside the answer (status %d, %d bytes): %v", a.status, got, err)
			}
			return a, h.ended(err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				continue
			}
			if v, ok := f.Value(http2.SettingMaxFrameSize); ok {
				h.maxFrame = v
			}
			if err := h.fr.WriteSettingsAck(); err != nil {
				return a, h.ended(err)
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				if err := h.fr.WritePing(true, f.Data); err != nil {
					return a, h.ended(err)
				}
			}
		case *http2.GoAwayFrame:
			h.gone = true
			if f.LastStreamID < id {
				return a, errReset
			}
		case *http2.RSTStreamFrame:
			if f.StreamID < id {
				// An earlier stream the server finished answering before
				// it read all of its body.
				continue
			}
			if f.StreamID != id {
				return a, fmt.Errorf("RST_STREAM on stream %d, which the client never opened", f.StreamID)
			}
			if final {
				return a, fmt.Errorf("stream reset (%v) inside the answer (status %d, %d of %d bytes)", f.ErrCode, a.status, got, cl)
			}
			return a, errReset
		case *http2.MetaHeadersFrame:
			if f.StreamID != id {
				return a, fmt.Errorf("HEADERS on stream %d while stream %d is open", f.StreamID, id)
			}
			if f.Truncated {
				return a, errors.New("field block over the limit")
			}
			if final {
				// Trailers.
				if len(f.PseudoFields()) > 0 || !f.StreamEnded() {
					return a, fmt.Errorf("trailers with pseudo-fields or without END_STREAM: %v", f.Fields)
				}
				return a, h.checkLength(a, head, cl, got)
			}
			status, n, err := answerHead(f)
			if err != nil {
				return a, err
			}
			if status < 200 {
				if f.StreamEnded() {
					return a, fmt.Errorf("interim %d answer ends the stream", status)
				}
				continue
			}
			a.status, cl, final = status, n, true
			if f.StreamEnded() {
				return a, h.checkLength(a, head, cl, got)
			}
		case *http2.DataFrame:
			if f.StreamID != id {
				return a, fmt.Errorf("DATA on stream %d while stream %d is open", f.StreamID, id)
			}
			if !final {
				return a, errors.New("DATA before the answer's HEADERS")
			}
			got += int64(len(f.Data()))
			if f.StreamEnded() {
				return a, h.checkLength(a, head, cl, got)
			}
		}
	}
}

// answerHead checks an answer's field block and returns its status and
// content-length (-1 for none).
func answerHead(f *http2.MetaHeadersFrame) (status int, cl int64, err error) {
	cl = -1
	pseudo := f.PseudoFields()
	if len(pseudo) != 1 || pseudo[0].Name != ":status" {
		return 0, cl, fmt.Errorf("answer pseudo-fields %v: want :status alone", pseudo)
	}
	s := pseudo[0].Value
	status, err = strconv.Atoi(s)
	if err != nil || len(s) != 3 || status < 100 || status > 599 {
		return 0, cl, fmt.Errorf(":status %q: want 100-599", s)
	}
	if status == 101 {
		return 0, cl, errors.New(":status 101 over HTTP/2 (RFC 9113 §8.6)")
	}
	for _, hf := range f.RegularFields() {
		switch hf.Name {
		case "connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade":
			return 0, cl, fmt.Errorf("connection-specific field %s: %q (RFC 9113 §8.2.2)", hf.Name, hf.Value)
		case "content-length":
			n, perr := strconv.ParseInt(hf.Value, 10, 64)
			if perr != nil || n < 0 || hf.Value[0] == '+' || cl >= 0 && cl != n {
				return 0, cl, fmt.Errorf("content-length %q", hf.Value)
			}
			cl = n
		}
	}
	if (status < 200 || status == 204) && cl >= 0 {
		return 0, cl, fmt.Errorf("%d answer with content-length %d", status, cl)
	}
	return status, cl, nil
}

// checkLength checks the DATA an answer carried against its status and
// content-length (RFC 9113 §8.1.1).
func (h *h2Conn) checkLength(a h2Answer, head bool, cl, got int64) error {
	switch {
	case (head || a.status == 204 || a.status == 304) && got > 0:
		return fmt.Errorf("%d bytes of DATA in an answer with no content (status %d, HEAD %v)", got, a.status, head)
	case head || a.status == 304:
	case cl >= 0 && cl != got:
		return fmt.Errorf("content-length %d, DATA %d bytes", cl, got)
	}
	return nil
}
