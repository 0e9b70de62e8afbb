package fileserver

import (
	"errors"
	"net/url"
	"path"
	"path/filepath"
	"strings"
)

// errBadPath is a request path that names no file: it does not decode,
// or holds a NUL or a backslash. The answer is 400.
var errBadPath = errors.New("invalid request path")

// errEscape is a path whose resolution leaves the root (a symbolic link
// pointing out of it); the answer is 404, as for a file that is not
// there.
var errEscape = errors.New("path resolves outside the root")

// Clean turns a request path (the target's path, percent-encoded, no
// query) into a file path relative to the root, with slashes: "" for the
// root itself, never starting with "/" and never holding a ".." element.
// dir reports a trailing slash, which asks for a directory. It is Caddy's
// SanitizedPathJoin without the join: the path is decoded and cleaned as
// a rooted path, so ".." stops at the root. A backslash is refused, not
// read as a separator or as a name's character: some file systems and
// every Windows client read it as a separator, and no site needs it.
func Clean(rawPath string) (rel string, dir bool, err error) {
	p := rawPath
	if strings.IndexByte(p, '%') >= 0 {
		if p, err = url.PathUnescape(p); err != nil {
			return "", false, errBadPath
		}
	}
	if strings.IndexByte(p, 0) >= 0 || strings.IndexByte(p, '\\') >= 0 {
		return "", false, errBadPath
	}
	if strings.HasPrefix(p, "/") {
		// Cleaned as it is: a path already clean comes back unchanged,
		// with no copy (path.Clean of "/"+p would copy it twice).
		rel = path.Clean(p)[1:]
	} else {
		rel = path.Clean("/" + p)[1:]
	}
	if rel != "" && !filepath.IsLocal(filepath.FromSlash(rel)) {
		return "", false, errBadPath
	}
	return rel, strings.HasSuffix(p, "/") && len(p) > 1, nil
}

// Hide is a file_server's hide list, as Caddy reads it: an entry without
// a slash hides every file or directory of that name (a glob) wherever
// it is; an entry with one hides that path and everything under it, or
// what it matches as a glob. Paths are absolute, made so once at load.
type Hide []string

// NewHide makes the entries with a slash absolute, relative to the
// working directory as in Caddy.
func NewHide(entries []string) Hide {
	h := make(Hide, 0, len(entries))
	for _, e := range entries {
		if strings.Contains(e, "/") {
			if abs, err := filepath.Abs(e); err == nil {
				e = abs
			}
		}
		h = append(h, e)
	}
	return h
}

// hidden reports whether the file at the absolute path name is hidden.
func (h Hide) hidden(name string) bool {
	for _, e := range h {
		if !strings.Contains(e, "/") {
			for _, c := range strings.Split(name, "/") {
				if ok, _ := filepath.Match(e, c); ok {
					return true
				}
			}
		} else if rest, ok := strings.CutPrefix(name, e); ok && (rest == "" || rest[0] == '/') {
			return true
		}
		if ok, _ := filepath.Match(e, name); ok {
			return true
		}
	}
	return false
}
