package h2

// maxFreeStreams bounds a FreeStreams list: about 17 KiB of structs,
// what the streams of one busy origin connection take.
const maxFreeStreams = 128

// maxKeptBody is the largest request body buffer a stream's struct keeps
// for its next stream: a small body (a gRPC message, a form) then costs
// no allocation, and the list holds at most 128 KiB of them.
const maxKeptBody = 1 << 10

// FreeStreams keeps the structs of finished client streams for later
// streams, so that a request to an HTTP/2 origin allocates none. The
// client connections of one loop share one (ClientConfig.Free): a
// connection with no stream open then holds none, and the loop at most
// maxFreeStreams, fewer than its peak of open streams. No lock: every
// connection sharing it runs on the same loop. The zero value is ready.
//
// A struct keeps its request body buffer when it is small (maxKeptBody).
//
// A struct gets here only once nothing can reach it any more: its stream
// closed (no longer in its connection's table, so a late frame of its
// finds nothing), its owner let go of it (Finish or Reset), and neither
// the write queue nor a header block in progress holds it. See
// ClientConn.recycle.
type FreeStreams struct {
	list []*ClientStream
}

// get is a cleared struct from the list, or a new one.
func (f *FreeStreams) get() *ClientStream {
	n := len(f.list)
	if n == 0 {
		return new(ClientStream)
	}
	s := f.list[n-1]
	f.list[n-1] = nil
	f.list = f.list[:n-1]
	*s = ClientStream{buf: s.buf[:0]}
	return s
}

// put keeps s for a later get, unless the list is full.
func (f *FreeStreams) put(s *ClientStream) {
	if len(f.list) < maxFreeStreams {
		f.list = append(f.list, s)
	}
}
