package encode

import (
	"io"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
)

// encoder is what gzip.Writer and zstd.Encoder both are: Caddy's
// encode.Encoder.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(io.Writer)
}

// Pool is one loop's encoders and output buffers, reused from one
// response to the next. An encoder's state is large (about 1 MiB for
// gzip, 1.5 MiB for zstd) and costs as much to clear as to compress a
// page, so a loop keeps a few; only streams whose origin is still
// sending hold one, so a loop needs as many as it has such streams at
// once. Used by its loop alone, it takes no lock.
type Pool struct {
	free []pooled
	bufs [][]byte
}

type pooled struct {
	f Format
	e encoder
}

// Bounds on what an idle loop keeps.
const (
	maxFreeEncoders = 4 // per format
	maxFreeBufs     = 16
	maxKeptBuf      = 128 << 10
	outBufSize      = 16 << 10
)

// get returns an encoder for f writing to w.
func (p *Pool) get(f Format, w io.Writer) encoder {
	for i := len(p.free) - 1; i >= 0; i-- {
		if p.free[i].f == f {
			e := p.free[i].e
			p.free = append(p.free[:i], p.free[i+1:]...)
			e.Reset(w)
			return e
		}
	}
	return newEncoder(f, w)
}

// put keeps e, reset to write nowhere, unless the loop has enough.
func (p *Pool) put(f Format, e encoder) {
	e.Reset(nil)
	n := 0
	for _, x := range p.free {
		if x.f == f {
			n++
		}
	}
	if n < maxFreeEncoders {
		p.free = append(p.free, pooled{f, e})
	}
}

// getBuf returns an empty output buffer.
func (p *Pool) getBuf() []byte {
	if n := len(p.bufs); n > 0 {
		b := p.bufs[n-1]
		p.bufs = p.bufs[:n-1]
		return b
	}
	return make([]byte, 0, outBufSize)
}

// putBuf keeps b for another response, unless it grew large.
func (p *Pool) putBuf(b []byte) {
	if b != nil && cap(b) <= maxKeptBuf && len(p.bufs) < maxFreeBufs {
		p.bufs = append(p.bufs, b[:0])
	}
}

// newEncoder makes an encoder for f. zstd runs on the calling goroutine
// (concurrency 1: no goroutine of its own, so it stays on the loop),
// with a small window and the library's lower-memory tables.
func newEncoder(f Format, w io.Writer) encoder {
	if f.Name == Zstd {
		level := zstd.SpeedDefault
		if f.Level != 0 {
			level = zstd.EncoderLevel(f.Level)
		}
		e, err := zstd.NewWriter(w, zstd.WithWindowSize(zstdWindow), zstd.WithEncoderConcurrency(1),
			zstd.WithLowerEncoderMem(true), zstd.WithZeroFrames(true), zstd.WithEncoderLevel(level),
			zstd.WithEncoderCRC(!f.NoChecksum))
		if err != nil {
			panic("encode: zstd options: " + err.Error()) // the options are constants and checked levels
		}
		return e
	}
	level := f.Level
	if level == 0 {
		level = DefaultGzipLevel
	}
	e, err := gzip.NewWriterLevel(w, level)
	if err != nil {
		panic("encode: gzip level: " + err.Error()) // ParseGzipLevel checked it
	}
	return e
}
