//go:build linux

package netpoll

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The io_uring ABI, as the kernel's include/uapi/linux/io_uring.h defines
// it: x/sys/unix has the system call numbers only.
const (
	uringSetupCQSize       = 1 << 3  // IORING_SETUP_CQSIZE
	uringSetupClamp        = 1 << 4  // IORING_SETUP_CLAMP
	uringSetupRDisabled    = 1 << 6  // IORING_SETUP_R_DISABLED (5.10)
	uringSetupSubmitAll    = 1 << 7  // IORING_SETUP_SUBMIT_ALL (5.18)
	uringSetupCoopTaskrun  = 1 << 8  // IORING_SETUP_COOP_TASKRUN (5.19)
	uringSetupSingleIssuer = 1 << 12 // IORING_SETUP_SINGLE_ISSUER (6.0)
	uringSetupDeferTaskrun = 1 << 13 // IORING_SETUP_DEFER_TASKRUN (6.1)

	uringFeatSingleMmap = 1 << 0  // IORING_FEAT_SINGLE_MMAP (5.4)
	uringFeatNoDrop     = 1 << 1  // IORING_FEAT_NODROP (5.5)
	uringFeatExtArg     = 1 << 8  // IORING_FEAT_EXT_ARG (5.11)
	uringFeatCQESkip    = 1 << 11 // IORING_FEAT_CQE_SKIP (5.17)

	uringOffSQRing = 0          // IORING_OFF_SQ_RING
	uringOffCQRing = 0x8000000  // IORING_OFF_CQ_RING
	uringOffSQEs   = 0x10000000 // IORING_OFF_SQES

	uringEnterGetEvents = 1 << 0 // IORING_ENTER_GETEVENTS
	uringEnterExtArg    = 1 << 3 // IORING_ENTER_EXT_ARG

	uringSQCQOverflow = 1 << 1 // IORING_SQ_CQ_OVERFLOW in the SQ ring's flags

	uringOpPollAdd     = 6  // IORING_OP_POLL_ADD
	uringOpPollRemove  = 7  // IORING_OP_POLL_REMOVE
	uringOpAccept      = 13 // IORING_OP_ACCEPT
	uringOpAsyncCancel = 14 // IORING_OP_ASYNC_CANCEL
	uringOpSend        = 26 // IORING_OP_SEND
	uringOpRecv        = 27 // IORING_OP_RECV

	uringPollAddMulti = 1 << 0 // IORING_POLL_ADD_MULTI (5.13), in sqe.len

	uringAcceptMultishot = 1 << 0 // IORING_ACCEPT_MULTISHOT (5.19), in sqe.ioprio
	uringRecvMultishot   = 1 << 1 // IORING_RECV_MULTISHOT (6.0), in sqe.ioprio

	uringSQEBufferSelect   = 1 << 5 // IOSQE_BUFFER_SELECT
	uringSQECQESkipSuccess = 1 << 6 // IOSQE_CQE_SKIP_SUCCESS

	uringCQEFBuffer = 1 << 0 // IORING_CQE_F_BUFFER: the buffer id is in flags >> 16
	uringCQEFMore   = 1 << 1 // IORING_CQE_F_MORE

	uringRegisterProbe       = 8      // IORING_REGISTER_PROBE
	uringRegisterEnableRings = 12     // IORING_REGISTER_ENABLE_RINGS
	uringRegisterPbufRing    = 22     // IORING_REGISTER_PBUF_RING (5.19)
	uringUnregisterPbufRing  = 23     // IORING_UNREGISTER_PBUF_RING
	uringOpSupported         = 1 << 0 // IO_URING_OP_SUPPORTED
)

// uringParams is struct io_uring_params (120 bytes).
type uringParams struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFD uint32
	resv                                                                   [3]uint32
	sqOff                                                                  uringSQOffsets
	cqOff                                                                  uringCQOffsets
}

// uringSQOffsets is struct io_sqring_offsets: where each field of the
// submission ring lies in its mapping.
type uringSQOffsets struct {
	head, tail, ringMask, ringEntries, flags, dropped, array, resv1 uint32
	userAddr                                                        uint64
}

// uringCQOffsets is struct io_cqring_offsets.
type uringCQOffsets struct {
	head, tail, ringMask, ringEntries, overflow, cqes, flags, resv1 uint32
	userAddr                                                        uint64
}

// uringSQE is struct io_uring_sqe (64 bytes). opFlags is the union that
// holds poll32_events for POLL_ADD.
type uringSQE struct {
	opcode      uint8
	flags       uint8
	ioprio      uint16
	fd          int32
	off         uint64
	addr        uint64
	len         uint32
	opFlags     uint32
	userData    uint64
	bufIndex    uint16
	personality uint16
	spliceFDIn  int32
	addr3       uint64
	pad         uint64
}

// uringCQE is struct io_uring_cqe (16 bytes).
type uringCQE struct {
	userData uint64
	res      int32
	flags    uint32
}

// uringGetEventsArg is struct io_uring_getevents_arg, passed with
// IORING_ENTER_EXT_ARG to bound a wait by a relative timeout.
type uringGetEventsArg struct {
	sigmask     uint64
	sigmaskSize uint32
	minWaitUsec uint32
	ts          uint64 // *unix.Timespec
}

// Compile-time checks of the ABI sizes.
var (
	_ [120 - unsafe.Sizeof(uringParams{})]byte
	_ [unsafe.Sizeof(uringParams{}) - 120]byte
	_ [64 - unsafe.Sizeof(uringSQE{})]byte
	_ [unsafe.Sizeof(uringSQE{}) - 64]byte
	_ [16 - unsafe.Sizeof(uringCQE{})]byte
	_ [unsafe.Sizeof(uringCQE{}) - 16]byte
	_ [24 - unsafe.Sizeof(uringGetEventsArg{})]byte
)

// ring is one io_uring instance: a submission queue (SQ) the loop fills
// and the kernel consumes, and a completion queue (CQ) the kernel fills and
// the loop consumes. Both rings and the SQE array are memory the kernel
// allocated and this process maps (never the Go heap: the kernel keeps
// reading and writing it between system calls, where the Go heap may not
// be relied on to stay put or alive).
//
// Memory ordering. head and tail of each ring are shared with the kernel,
// which runs on other CPUs at the same time (a completion is posted from
// the task work or the interrupt that made a socket ready). The kernel
// publishes with smp_store_release and reads with smp_load_acquire; this
// side must pair with them, so every access to a shared head or tail goes
// through sync/atomic (sequentially consistent in Go, so at least
// acquire for loads and release for stores on every architecture; plain
// loads and stores could be reordered by the compiler or, on arm64 and
// other weakly ordered CPUs, by the hardware). The fields that only this
// side writes (sqTail, the array entries, cqHead) still need the release
// store, because the kernel reads them concurrently.
type ring struct {
	fd       int
	features uint32
	flags    uint32 // the setup flags the kernel took
	disabled bool   // set up R_DISABLED and not enabled yet: no enter

	sqMem, cqMem, sqeMem []byte // cqMem is sqMem with IORING_FEAT_SINGLE_MMAP

	sqHead  *uint32 // kernel writes (release) after consuming SQEs
	sqTail  *uint32 // we write (release) after filling SQEs
	sqFlags *uint32 // kernel writes: IORING_SQ_CQ_OVERFLOW
	sqMask  uint32
	sqes    []uringSQE
	tail    uint32 // our SQ tail: SQEs filled up to here, published on enter
	// backlog holds, in order, what did not fit in a full SQ that the
	// kernel would not take (EBUSY while its CQ overflow list is full, on
	// older kernels): flush moves it in before the next wait.
	backlog []uringSQE

	cqHead *uint32 // we write (release) after reading CQEs
	cqTail *uint32 // kernel writes (release) after posting CQEs
	cqMask uint32
	cqes   []uringCQE

	arg uringGetEventsArg
	ts  unix.Timespec
	// counter, when set, counts the io_uring_enter calls, for the loop's
	// Stats (read from other goroutines).
	counter *atomic.Uint64
}

// newRing sets up a ring with sqEntries submission and cqEntries
// completion slots (the kernel rounds both up to powers of two) and maps
// its memory.
//
// The ring asks for IORING_SETUP_COOP_TASKRUN where the kernel has it
// (5.19): a poll's completion is then posted when the loop's thread next
// enters the kernel, or wakes it if it sleeps, instead of interrupting it
// with an inter-processor interrupt while it runs. Without it a busy loop
// took one such interrupt per socket wake-up, and io_uring cost 1.8 times
// epoll's CPU per request (docs/performance.md, "io_uring as a readiness
// backend"); with it, the same.
//
// A bound ring (one a Loop owns) also asks for SINGLE_ISSUER and
// DEFER_TASKRUN (6.1): the completion work of every request is then done
// only when the loop enters the kernel to wait, in a batch, never by an
// interrupt or a kernel worker. Both tie the ring to one thread, so the
// ring starts disabled (R_DISABLED) and enable binds it to the thread that
// first waits on it: the loop's locked thread, not the one that opened the
// loop. An older kernel refuses a flag with EINVAL, and the ring is set up
// with fewer.
func newRing(sqEntries, cqEntries uint32, bound bool) (*ring, error) {
	const base = uringSetupCQSize | uringSetupClamp
	tries := []uint32{base | uringSetupCoopTaskrun, base}
	if bound {
		tries = append([]uint32{base | uringSetupCoopTaskrun | uringSetupSubmitAll |
			uringSetupSingleIssuer | uringSetupDeferTaskrun | uringSetupRDisabled}, tries...)
	}
	var p uringParams
	var fd uintptr
	var errno unix.Errno
	for _, flags := range tries {
		p = uringParams{flags: flags, cqEntries: cqEntries}
		fd, _, errno = unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(sqEntries), uintptr(unsafe.Pointer(&p)), 0)
		if errno != unix.EINVAL {
			break
		}
	}
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &ring{fd: int(fd), features: p.features, flags: p.flags, disabled: p.flags&uringSetupRDisabled != 0}
	if err := r.mmap(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// deferred reports whether the ring runs its completion work only when
// this side enters the kernel (DEFER_TASKRUN).
func (r *ring) deferred() bool { return r.flags&uringSetupDeferTaskrun != 0 }

// enable starts a ring set up disabled, binding it to the calling thread;
// it must be called on the thread that will submit and wait from now on.
func (r *ring) enable() error {
	if !r.disabled {
		return nil
	}
	if err := r.register(uringRegisterEnableRings, nil, 0); err != nil {
		return fmt.Errorf("IORING_REGISTER_ENABLE_RINGS: %w", err)
	}
	r.disabled = false
	return nil
}

// register is one io_uring_register call.
func (r *ring) register(op uintptr, arg unsafe.Pointer, n uintptr) error {
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), n, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}

func (r *ring) mmap(p *uringParams) error {
	sqSize := int(p.sqOff.array) + int(p.sqEntries)*4
	cqSize := int(p.cqOff.cqes) + int(p.cqEntries)*int(unsafe.Sizeof(uringCQE{}))
	single := p.features&uringFeatSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	const prot, flags = unix.PROT_READ | unix.PROT_WRITE, unix.MAP_SHARED | unix.MAP_POPULATE
	var err error
	if r.sqMem, err = unix.Mmap(r.fd, uringOffSQRing, sqSize, prot, flags); err != nil {
		return fmt.Errorf("mmap io_uring SQ ring: %w", err)
	}
	r.cqMem = r.sqMem
	if !single {
		if r.cqMem, err = unix.Mmap(r.fd, uringOffCQRing, cqSize, prot, flags); err != nil {
			r.cqMem = nil
			return fmt.Errorf("mmap io_uring CQ ring: %w", err)
		}
	}
	sqeSize := int(p.sqEntries) * int(unsafe.Sizeof(uringSQE{}))
	if r.sqeMem, err = unix.Mmap(r.fd, uringOffSQEs, sqeSize, prot, flags); err != nil {
		return fmt.Errorf("mmap io_uring SQEs: %w", err)
	}
	u32 := func(mem []byte, off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead = u32(r.sqMem, p.sqOff.head)
	r.sqTail = u32(r.sqMem, p.sqOff.tail)
	r.sqFlags = u32(r.sqMem, p.sqOff.flags)
	r.sqMask = *u32(r.sqMem, p.sqOff.ringMask)
	r.sqes = unsafe.Slice((*uringSQE)(unsafe.Pointer(&r.sqeMem[0])), p.sqEntries)
	r.cqHead = u32(r.cqMem, p.cqOff.head)
	r.cqTail = u32(r.cqMem, p.cqOff.tail)
	r.cqMask = *u32(r.cqMem, p.cqOff.ringMask)
	r.cqes = unsafe.Slice((*uringCQE)(unsafe.Pointer(&r.cqMem[p.cqOff.cqes])), p.cqEntries)
	// The SQ array maps ring slots to SQE indexes; it stays the identity,
	// so the SQE for slot tail&mask is sqes[tail&mask]. The kernel reads
	// an entry only once a tail covering it is published (release), so
	// these plain stores are ordered before it.
	array := unsafe.Slice((*uint32)(unsafe.Pointer(&r.sqMem[p.sqOff.array])), p.sqEntries)
	for i := range array {
		array[i] = uint32(i)
	}
	// Nothing was submitted yet: the kernel's tail is ours.
	r.tail = atomic.LoadUint32(r.sqTail)
	return nil
}

// pending is how many filled SQEs the kernel has not consumed yet.
func (r *ring) pending() uint32 {
	// Acquire: the kernel released head after it finished reading the
	// SQEs before it, so their slots may be refilled.
	return r.tail - atomic.LoadUint32(r.sqHead)
}

// push queues s for the next enter. A full SQ is submitted on the spot;
// if the kernel takes none of it, s waits in the backlog. So queuing never
// fails: a registration or a re-armed poll is never lost, at worst late.
func (r *ring) push(s uringSQE) {
	if len(r.backlog) == 0 {
		if r.pending() == uint32(len(r.sqes)) && !r.disabled {
			r.enter(0, 0, nil) // what it did not take is left in the SQ
		}
		if r.pending() < uint32(len(r.sqes)) {
			r.sqes[r.tail&r.sqMask] = s
			r.tail++
			return
		}
	}
	r.backlog = append(r.backlog, s)
}

// flush moves the backlog into the SQ, submitting as it fills. It reports
// false if the kernel took none of a full SQ: the caller then must not
// block, so that completions are reaped and the kernel can take more.
func (r *ring) flush() bool {
	for len(r.backlog) > 0 {
		free := uint32(len(r.sqes)) - r.pending()
		n := copy(r.sqes[r.tail&r.sqMask:], r.backlog[:min(int(free), len(r.backlog))])
		r.tail += uint32(n)
		r.backlog = r.backlog[n:]
		if len(r.backlog) == 0 {
			r.backlog = nil
			break
		}
		if n > 0 {
			continue // the copy stopped at the end of the array: wrap
		}
		before := r.pending()
		r.enter(0, 0, nil)
		if r.pending() == before {
			return false
		}
	}
	return true
}

// enter is one io_uring_enter: it publishes and submits every filled SQE
// and, with IORING_ENTER_GETEVENTS in flags, waits until minComplete
// completions are in the CQ ring or the timeout passes (nil: no limit).
// It returns the kernel's error as is (EINTR, ETIME...).
func (r *ring) enter(flags uint32, minComplete uint32, timeout *time.Duration) error {
	// Release: the SQEs written above become visible to the kernel no
	// later than the tail that covers them.
	atomic.StoreUint32(r.sqTail, r.tail)
	submit := r.pending()
	var arg unsafe.Pointer
	var argSize uintptr
	if timeout != nil {
		r.ts = unix.NsecToTimespec(int64(*timeout))
		r.arg = uringGetEventsArg{ts: uint64(uintptr(unsafe.Pointer(&r.ts)))}
		arg, argSize = unsafe.Pointer(&r.arg), unsafe.Sizeof(r.arg)
		flags |= uringEnterExtArg
	}
	if r.counter != nil {
		r.counter.Add(1)
	}
	var errno unix.Errno
	if minComplete == 0 {
		// Submitting poll requests and reaping without waiting cannot
		// block: skip telling the scheduler, as RawRead does.
		_, _, errno = unix.RawSyscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), 0,
			uintptr(flags), uintptr(arg), argSize)
	} else {
		// A wait blocks: the runtime must know, to run other goroutines
		// on this P meanwhile.
		_, _, errno = unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(minComplete),
			uintptr(flags), uintptr(arg), argSize)
	}
	runtime.KeepAlive(r) // r.arg points at r.ts
	if errno != 0 {
		return errno
	}
	return nil
}

// ready is how many CQEs wait to be read.
func (r *ring) ready() uint32 {
	// Acquire on the tail: the CQEs before it are fully written. The head
	// is ours alone to write, so loading it needs no ordering, but it is
	// shared memory and the atomic load keeps that obvious.
	return atomic.LoadUint32(r.cqTail) - atomic.LoadUint32(r.cqHead)
}

// overflowed reports completions the kernel kept aside because the CQ
// ring was full; an enter with IORING_ENTER_GETEVENTS moves them in.
func (r *ring) overflowed() bool { return atomic.LoadUint32(r.sqFlags)&uringSQCQOverflow != 0 }

func (r *ring) close() error {
	if r.cqMem != nil && r.sqMem != nil && &r.cqMem[0] != &r.sqMem[0] {
		unix.Munmap(r.cqMem)
	}
	for _, m := range [][]byte{r.sqMem, r.sqeMem} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	r.sqeMem, r.cqMem, r.sqMem, r.sqes, r.cqes = nil, nil, nil, nil, nil
	return unix.Close(r.fd)
}
