//go:build !linux

package fileserver

import "os"

// openBeneath opens rel (relative, cleaned) under root for reading; see
// openChecked. The systems other than Linux have no openat2.
func openBeneath(root, rel string) (*os.File, error) { return openChecked(root, rel) }
