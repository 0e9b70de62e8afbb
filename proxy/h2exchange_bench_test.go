package proxy

import (
	"encoding/binary"
	"net"
	"net/netip"
	"testing"

	"github.com/pollproxy/pollproxy/proxy/server/servertest"
	"github.com/pollproxy/pollproxy/proxy/upstream"
)

// benchH2Head is the HPACK block of benchH2COrigin's response head:
// :status 200 (indexed), content-type: text/plain and content-length: 1024
// (literals with indexed names, never indexed).
var benchH2Head = append(append([]byte{0x88, 0x0f, 0x10, 10}, "text/plain"...), append([]byte{0x0f, 0x0d, 4}, "1024"...)...)

// benchH2Indexing is the same head with both fields added to the dynamic
// table (literals with incremental indexing, indexed names), as Go's and
// grpc-go's encoders send fields they have not sent before;
// benchH2Indexed is every later one: three table indices.
var (
	benchH2Indexing = append(append([]byte{0x88, 0x5f, 10}, "text/plain"...), append([]byte{0x5c, 4}, "1024"...)...)
	benchH2Indexed  = []byte{0x88, 0xbf, 0xbe}
)

// benchH2COrigin is an h2c origin on loopback, written on fixed buffers:
// it answers every request, once the request ends (END_STREAM on its
// HEADERS or DATA), with benchH2Head and 1 KiB of DATA that ends the
// stream, gives the windows of request DATA back at once (WINDOW_UPDATE
// for the connection and the stream, as origins do), acknowledges
// SETTINGS and ignores everything else. It allocates nothing per
// request, so a benchmark's allocations are the proxy's. With indexed,
// its heads are benchH2Indexing and then benchH2Indexed.
func benchH2COrigin(b testing.TB, indexed bool) netip.AddrPort {
	b.Helper()
	addr := servertest.ServeConns(b, func(c net.Conn) {
		in := make([]byte, 64<<10)
		out := make([]byte, 0, 64<<10)
		body := make([]byte, 1024)
		var inc [4]byte
		head := benchH2Head
		if indexed {
			head = benchH2Indexing
		}
		frame := func(out []byte, typ, flags byte, id uint32, p []byte) []byte {
			out = append(out, byte(len(p)>>16), byte(len(p)>>8), byte(len(p)), typ, flags)
			out = binary.BigEndian.AppendUint32(out, id)
			return append(out, p...)
		}
		if _, err := c.Write(frame(out[:0], 0x4, 0, 0, nil)); err != nil { // SETTINGS
			return
		}
		have, skip := 0, 24 // the client's preface comes first
		for {
			n, err := c.Read(in[have:])
			if err != nil {
				return
			}
			have += n
			p := in[:have]
			if skip > 0 {
				k := min(skip, len(p))
				p, skip = p[k:], skip-k
			}
			out = out[:0]
			for len(p) >= 9 {
				size := int(p[0])<<16 | int(p[1])<<8 | int(p[2])
				if len(p) < 9+size {
					break
				}
				typ, flags, id := p[3], p[4], binary.BigEndian.Uint32(p[5:])&(1<<31-1)
				switch {
				case typ == 0x4 && flags&0x1 == 0: // SETTINGS: acknowledged
					out = frame(out, 0x4, 0x1, 0, nil)
				case typ == 0x0 && size > 0: // DATA: its windows back
					binary.BigEndian.PutUint32(inc[:], uint32(size))
					out = frame(out, 0x8, 0, 0, inc[:])
					out = frame(out, 0x8, 0, id, inc[:])
				}
				if (typ == 0x1 || typ == 0x0) && flags&0x1 != 0 { // the request's end: the answer
					out = frame(out, 0x1, 0x4, id, head)
					out = frame(out, 0x0, 0x1, id, body)
					if indexed {
						head = benchH2Indexed
					}
				}
				p = p[9+size:]
			}
			have = copy(in, p)
			if len(out) > 0 {
				if _, err := c.Write(out); err != nil {
					return
				}
			}
		}
	})
	return netip.MustParseAddrPort(addr)
}

// BenchmarkH2Exchange is BenchmarkExchange to an h2c origin: one GET per
// iteration on a stream of a kept-alive origin connection (the request
// head as HTTP/2 fields, HPACK both ways, the stream's events), released
// by the front end as both front ends do.
func BenchmarkH2Exchange(b *testing.B) { benchH2Exchange(b, false, nil) }

// BenchmarkH2ExchangeIndexed is BenchmarkH2Exchange to an origin whose
// heads are table indices once it sent them, as a Go or gRPC origin's
// repeated fields are: the decoder makes no string of them.
func BenchmarkH2ExchangeIndexed(b *testing.B) { benchH2Exchange(b, true, nil) }

// BenchmarkH2ExchangePost is BenchmarkH2Exchange with a 100-byte request
// body (a gRPC unary call's size): a DATA frame to the origin, and its
// WINDOW_UPDATEs back.
func BenchmarkH2ExchangePost(b *testing.B) { benchH2Exchange(b, false, make([]byte, 100)) }

func benchH2Exchange(b *testing.B, indexed bool, body []byte) {
	addr := benchH2COrigin(b, indexed)
	l := startedLoop(b)
	h := NewHandler(l, Config{Upstreams: []*upstream.Upstream{{Name: addr.String(), Addr: addr}}, H2C: true}.WithDefaults())
	benchBodies(b, l, h, true, body)
}
