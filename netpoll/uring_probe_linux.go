//go:build linux

package netpoll

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// uringProbeOps is struct io_uring_probe with room for every opcode.
type uringProbeOps struct {
	lastOp, opsLen uint8
	resv           uint16
	resv2          [3]uint32
	ops            [256]struct {
		op, resv uint8
		flags    uint16
		resv2    uint32
	}
}

// probeURing checks that this process may use io_uring as the poller
// needs it, and says why not otherwise: io_uring_setup may be refused
// (ENOSYS on old or stripped kernels, EPERM from a seccomp filter such as
// container runtimes' default profiles, or from the kernel.io_uring_disabled
// sysctl), the kernel may lack an operation or feature (IORING_FEAT_EXT_ARG
// came in 5.11, multishot poll in 5.13), or a filter may let the setup
// through and refuse what follows. So the probe does what the poller does:
// it arms a multishot poll on an eventfd, makes it readable and waits for
// the completion with a timeout.
func probeURing() error {
	r, err := newRing(4, 8, false)
	if err != nil {
		return explainURingSetup(err)
	}
	defer r.close()
	const need = uringFeatNoDrop | uringFeatExtArg
	if r.features&need != need {
		return errors.New("the kernel's io_uring is too old (it needs IORING_FEAT_NODROP and IORING_FEAT_EXT_ARG, Linux 5.11)")
	}
	var probe uringProbeOps
	_, _, errno := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), uringRegisterProbe,
		uintptr(unsafe.Pointer(&probe)), uintptr(len(probe.ops)), 0, 0)
	if errno != 0 {
		return fmt.Errorf("IORING_REGISTER_PROBE: %w (Linux 5.6 or later is needed)", errno)
	}
	for _, op := range []struct {
		code uint8
		name string
	}{{uringOpPollAdd, "IORING_OP_POLL_ADD"}, {uringOpPollRemove, "IORING_OP_POLL_REMOVE"}} {
		if int(op.code) >= int(probe.opsLen) || probe.ops[op.code].flags&uringOpSupported == 0 {
			return fmt.Errorf("the kernel's io_uring does not support %s", op.name)
		}
	}

	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		return fmt.Errorf("eventfd: %w", err)
	}
	defer unix.Close(efd)
	r.push(uringSQE{opcode: uringOpPollAdd, fd: int32(efd), opFlags: poll32(unix.POLLIN), len: uringPollAddMulti, userData: 1})
	one := [8]byte{1}
	if _, err := unix.Write(efd, one[:]); err != nil {
		return fmt.Errorf("eventfd write: %w", err)
	}
	timeout := time.Second
	deadline := time.Now().Add(timeout)
	for r.ready() == 0 {
		if err := r.enter(uringEnterGetEvents, 1, &timeout); err != nil && err != unix.EINTR && err != unix.ETIME {
			return fmt.Errorf("io_uring_enter: %w", err)
		}
		if timeout = time.Until(deadline); timeout <= 0 && r.ready() == 0 {
			return errors.New("io_uring_enter: a multishot poll on a readable eventfd did not complete")
		}
	}
	c := r.cqes[*r.cqHead&r.cqMask]
	switch {
	case c.res < 0:
		return fmt.Errorf("multishot IORING_OP_POLL_ADD (Linux 5.13): %w", unix.Errno(-c.res))
	case uint32(c.res)&unix.POLLIN == 0 || c.flags&uringCQEFMore == 0:
		return fmt.Errorf("multishot IORING_OP_POLL_ADD (Linux 5.13): completion res %#x flags %#x, want POLLIN with IORING_CQE_F_MORE", c.res, c.flags)
	}
	return nil
}

// explainURingSetup adds the likely cause to a refused io_uring_setup.
func explainURingSetup(err error) error {
	switch {
	case errors.Is(err, unix.ENOSYS):
		return fmt.Errorf("%w: the kernel has no io_uring (Linux 5.1+, CONFIG_IO_URING) or a seccomp filter hides it", err)
	case errors.Is(err, unix.EPERM):
		if b, rerr := os.ReadFile("/proc/sys/kernel/io_uring_disabled"); rerr == nil {
			switch v := strings.TrimSpace(string(b)); v {
			case "2":
				return fmt.Errorf("%w: sysctl kernel.io_uring_disabled = 2 turns io_uring off", err)
			case "1":
				return fmt.Errorf("%w: sysctl kernel.io_uring_disabled = 1 allows io_uring only to CAP_SYS_ADMIN and the group in kernel.io_uring_group", err)
			}
		}
		return fmt.Errorf("%w: a seccomp filter (the default profile of Docker and other container runtimes) or a security module denies io_uring", err)
	case errors.Is(err, unix.ENOMEM):
		return fmt.Errorf("%w: before Linux 5.12 ring memory counts against RLIMIT_MEMLOCK", err)
	}
	return err
}
