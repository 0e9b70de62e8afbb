package fileserver

import (
	"errors"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// noOpenat2 is set once openat2 proved missing (a kernel before 5.6, or
// a seccomp filter that refuses it): every open then takes the portable
// way.
var noOpenat2 atomic.Bool

// openBeneath opens rel (relative, cleaned) under root for reading. The
// kernel resolves it with RESOLVE_BENEATH: a symbolic link that leaves
// root, or any absolute one, fails the open (EXDEV), and so does a
// "magic" /proc link. O_NONBLOCK keeps a FIFO from blocking the worker
// in open; what is not a regular file or a directory is refused after.
func openBeneath(root, rel string) (*os.File, error) {
	if noOpenat2.Load() {
		return openChecked(root, rel)
	}
	dirfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	return openUnder(dirfd, root, rel)
}

// openRoot opens root as the directory openUnder resolves beneath.
func openRoot(root string) (int, error) {
	dirfd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &os.PathError{Op: "open", Path: root, Err: err}
	}
	return dirfd, nil
}

// openAllBeneath calls each for every rel under root in turn, with the
// file or the error openBeneath would give: the root is opened once for
// them all (the file matcher asks about a few candidates at a time).
func openAllBeneath(root string, rels []string, each func(i int, f *os.File, err error)) {
	dirfd := -1
	if !noOpenat2.Load() {
		var err error
		if dirfd, err = openRoot(root); err != nil {
			for i := range rels {
				each(i, nil, err)
			}
			return
		}
		defer unix.Close(dirfd)
	}
	for i, rel := range rels {
		if dirfd < 0 || noOpenat2.Load() {
			f, err := openChecked(root, rel)
			each(i, f, err)
			continue
		}
		f, err := openUnder(dirfd, root, rel)
		each(i, f, err)
	}
}

// openUnder is openBeneath's open of rel under root, opened as dirfd.
func openUnder(dirfd int, root, rel string) (*os.File, error) {
	if rel == "" {
		rel = "."
	}
	how := unix.OpenHow{
		Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NONBLOCK,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), root+"/"+rel), nil
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue // EAGAIN: a rename raced the lookup; try again
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && !permissionOf(root, rel):
			noOpenat2.Store(true)
			return openChecked(root, rel)
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
			return nil, errEscape
		}
		return nil, &os.PathError{Op: "open", Path: rel, Err: err}
	}
}

// permissionOf tells a real EPERM on the file from a seccomp filter's
// EPERM for the system call: only the latter lets the portable open in.
func permissionOf(root, rel string) bool {
	_, err := os.Lstat(root + "/" + rel)
	return err == nil
}

// statBeneath reads the metadata of what rel names under root, following
// symbolic links only while they stay under it: a listing's look at a
// link's target. O_PATH needs no permission to read the file, as stat.
func statBeneath(root, rel string) (os.FileInfo, error) {
	if noOpenat2.Load() {
		return statChecked(root, rel)
	}
	dirfd, err := openRoot(root)
	if err != nil {
		return nil, err
	}
	defer unix.Close(dirfd)
	how := unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_MAGICLINKS,
	}
	for {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch {
		case err == nil:
			f := os.NewFile(uintptr(fd), root+"/"+rel)
			defer f.Close()
			return f.Stat()
		case errors.Is(err, unix.EINTR), errors.Is(err, unix.EAGAIN):
			continue
		case errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EPERM) && !permissionOf(root, rel):
			noOpenat2.Store(true)
			return statChecked(root, rel)
		case errors.Is(err, unix.EXDEV), errors.Is(err, unix.ELOOP):
			return nil, errEscape
		}
		return nil, &os.PathError{Op: "stat", Path: rel, Err: err}
	}
}
