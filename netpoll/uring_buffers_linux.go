//go:build linux

package netpoll

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Memory the kernel reads into or sends from between two system calls is
// mapped anonymously here, never taken from the Go heap: the collector may
// free a heap object the kernel still holds, and nothing pins it for that
// long. Both kinds below are per loop and shared by its connections, so an
// idle connection holds none of either.

// uringBuf is struct io_uring_buf, one entry of a provided-buffer ring.
// The kernel keeps the ring's tail in entry 0's resv field.
type uringBuf struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// uringBufReg is struct io_uring_buf_reg, the argument of
// IORING_REGISTER_PBUF_RING.
type uringBufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

var (
	_ [16 - unsafe.Sizeof(uringBuf{})]byte
	_ [unsafe.Sizeof(uringBuf{}) - 16]byte
	_ [40 - unsafe.Sizeof(uringBufReg{})]byte
)

// Provided buffers: a multishot receive takes one of these for each batch
// of bytes it finds on a socket, so the loop lends memory only to sockets
// that have something to say. 256 of 16 KiB (4 MiB of address space per
// loop, resident as it is used) let a loop take a 16 KiB TLS record on
// 256 connections in one iteration; a receive that finds none left ends
// with ENOBUFS and is armed again when buffers come back.
const (
	uringBufCount = 256
	uringBufSize  = 16 << 10
	uringBufGroup = 0
)

// bufRing is a provided-buffer ring (IORING_REGISTER_PBUF_RING, 5.19).
// Only this side writes the ring; the kernel reads the entries below the
// tail and takes buffers from the head, which it keeps to itself.
type bufRing struct {
	mem  []byte     // the ring's entries
	ents []uringBuf // mem as entries
	data []byte     // the buffers, uringBufCount × uringBufSize
	tail uint16     // entries filled up to here; published by publish
	// tailWord is the 32 bits holding entry 0's bid and the shared tail
	// (resv): Go has no 16-bit atomic store, and the bid half is ours.
	tailWord *uint32
	lent     int // buffers the kernel may fill (in the ring, not yet returned in a completion)
}

// newBufRing maps and registers a provided-buffer ring with r. It
// fails on kernels before 5.19 and on big-endian machines, where the
// tail's half of tailWord is the other one.
func newBufRing(r *ring) (*bufRing, error) {
	if bigEndian {
		return nil, fmt.Errorf("provided-buffer rings are used on little-endian machines only")
	}
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_PRIVATE | unix.MAP_ANONYMOUS
	mem, err := unix.Mmap(-1, 0, uringBufCount*int(unsafe.Sizeof(uringBuf{})), prot, flags)
	if err != nil {
		return nil, fmt.Errorf("mmap buffer ring: %w", err)
	}
	data, err := unix.Mmap(-1, 0, uringBufCount*uringBufSize, prot, flags)
	if err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("mmap buffers: %w", err)
	}
	b := &bufRing{mem: mem, data: data}
	b.ents = unsafe.Slice((*uringBuf)(unsafe.Pointer(&mem[0])), uringBufCount)
	b.tailWord = (*uint32)(unsafe.Pointer(&mem[12]))
	reg := uringBufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: uringBufCount, bgid: uringBufGroup}
	if err := r.register(uringRegisterPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		b.unmap()
		return nil, fmt.Errorf("IORING_REGISTER_PBUF_RING: %w", err)
	}
	for id := range uringBufCount {
		b.give(uint16(id))
	}
	b.publish()
	return b, nil
}

// buf returns buffer id's memory.
func (b *bufRing) buf(id uint16) []byte {
	off := int(id) * uringBufSize
	return b.data[off : off+uringBufSize : off+uringBufSize]
}

// give puts buffer id back in the ring; the kernel sees it after publish.
func (b *bufRing) give(id uint16) {
	e := &b.ents[b.tail&(uringBufCount-1)]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.data[int(id)*uringBufSize])))
	e.len = uringBufSize
	e.bid = id
	b.tail++
	b.lent++
}

// took notes that the kernel used a buffer (a completion named it).
func (b *bufRing) took() { b.lent-- }

// publish makes the buffers given so far visible to the kernel. Release:
// the entries written above are seen no later than the tail covering them.
func (b *bufRing) publish() {
	atomic.StoreUint32(b.tailWord, uint32(b.tail)<<16|uint32(b.ents[0].bid))
}

func (b *bufRing) unregister(r *ring) {
	reg := uringBufReg{bgid: uringBufGroup}
	r.register(uringUnregisterPbufRing, unsafe.Pointer(&reg), 1)
}

func (b *bufRing) unmap() {
	unix.Munmap(b.mem)
	unix.Munmap(b.data)
	b.mem, b.ents, b.data = nil, nil, nil
}

// Send buffers: Write copies a handler's bytes into one of these and the
// loop submits a send from it; the copy is what lets Write return at once
// and the handler reuse its buffer, as a send(2) into the socket buffer
// does. A connection holds at most uringSendChunks of them while it has
// bytes on their way, and none once they are sent.
const (
	uringChunkSize  = 64 << 10
	uringSendChunks = 2
	uringSlabChunks = 16 // mapped at a time
)

// chunkPool hands out send buffers from anonymous mappings. Chunks come
// back to the pool, not to the kernel: a loop that once had many senders
// keeps their memory mapped, as a socket buffer's would be reused.
type chunkPool struct {
	free  [][]byte
	slabs [][]byte
}

func (c *chunkPool) get() ([]byte, error) {
	if len(c.free) == 0 {
		slab, err := unix.Mmap(-1, 0, uringSlabChunks*uringChunkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err != nil {
			return nil, err
		}
		c.slabs = append(c.slabs, slab)
		for i := range uringSlabChunks {
			c.free = append(c.free, slab[i*uringChunkSize:(i+1)*uringChunkSize:(i+1)*uringChunkSize])
		}
	}
	b := c.free[len(c.free)-1]
	c.free = c.free[:len(c.free)-1]
	return b, nil
}

func (c *chunkPool) put(b []byte) { c.free = append(c.free, b[:cap(b)]) }

func (c *chunkPool) unmap() {
	for _, s := range c.slabs {
		unix.Munmap(s)
	}
	c.slabs, c.free = nil, nil
}
