//go:build !linux

package fileserver

import "os"

// openBeneath opens rel (relative, cleaned) under root for reading; see
// openChecked. The systems other than Linux have no openat2.
func openBeneath(root, rel string) (*os.File, error) { return openChecked(root, rel) }

// openAllBeneath calls each for every rel under root in turn, with the
// file or the error openBeneath gives.
func openAllBeneath(root string, rels []string, each func(i int, f *os.File, err error)) {
	for i, rel := range rels {
		f, err := openChecked(root, rel)
		each(i, f, err)
	}
}

// statBeneath reads the metadata of what rel names under root; see
// statChecked.
func statBeneath(root, rel string) (os.FileInfo, error) { return statChecked(root, rel) }
