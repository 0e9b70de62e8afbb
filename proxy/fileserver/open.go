package fileserver

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// openChecked opens rel under root without openat2: the path is resolved
// (symbolic links followed) and must stay under the resolved root; the
// resolved path is opened without following a last link, and the file
// opened must be the one resolved. A directory swapped for a link
// between the check and the open could still be followed there, which
// only openat2 rules out.
func openChecked(root, rel string) (*os.File, error) {
	real, err := resolveChecked(root, rel)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(real, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return nil, err
	}
	opened, err1 := f.Stat()
	resolved, err2 := os.Stat(real)
	if err1 != nil || err2 != nil || !os.SameFile(opened, resolved) {
		f.Close()
		return nil, errEscape
	}
	return f, nil
}

// statChecked is openChecked's resolution for a stat: the path is
// resolved (symbolic links followed) and must stay under the resolved
// root.
func statChecked(root, rel string) (os.FileInfo, error) {
	real, err := resolveChecked(root, rel)
	if err != nil {
		return nil, err
	}
	return os.Stat(real)
}

// resolveChecked resolves rel under root, symbolic links followed, and
// refuses a result that is not under the resolved root.
func resolveChecked(root, rel string) (string, error) {
	realRoot, err := filepath.EvalSymlinks(root)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(filepath.Join(realRoot, filepath.FromSlash(rel)))
	if err != nil {
		return "", err
	}
	if real != realRoot && !strings.HasPrefix(real, strings.TrimSuffix(realRoot, "/")+"/") {
		return "", errEscape
	}
	return real, nil
}
