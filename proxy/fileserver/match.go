package fileserver

import (
	"os"
	"time"
)

// Found is what the file matcher learns of one candidate.
type Found struct {
	Exists bool
	Dir    bool
	Size   int64
	Mod    time.Time
}

// Lookup stats rels (cleaned, relative) under root, in the pool: the file
// matcher's work. A candidate that resolves out of the root does not
// exist, as for file_server.
func Lookup(root string, rels []string) []Found {
	out := make([]Found, len(rels))
	openAllBeneath(root, rels, func(i int, f *os.File, err error) {
		if err != nil {
			return
		}
		info, err := f.Stat()
		f.Close()
		if err == nil && (info.IsDir() || info.Mode().IsRegular()) {
			out[i] = Found{Exists: true, Dir: info.IsDir(), Size: info.Size(), Mod: info.ModTime()}
		}
	})
	return out
}
