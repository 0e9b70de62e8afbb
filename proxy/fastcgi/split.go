package fastcgi

import (
	"errors"
	"unicode/utf8"
)

// ErrSplitNotASCII is a split extension with a byte outside ASCII: the
// split matches bytes, and only ASCII letters fold.
var ErrSplitNotASCII = errors.New("split path contains non-ASCII characters")

// Split is the transport's split: the extensions (".php") at which a
// request path is cut into the script and PATH_INFO, lower-cased ASCII.
type Split []string

// NewSplit checks and lower-cases the split extensions, as Caddy's
// transport does when it is provisioned.
func NewSplit(exts []string) (Split, error) {
	s := make(Split, len(exts))
	for i, e := range exts {
		b := []byte(e)
		for j, c := range b {
			if c >= utf8.RuneSelf {
				return nil, ErrSplitNotASCII
			}
			if 'A' <= c && c <= 'Z' {
				b[j] = c + 'a' - 'A'
			}
		}
		s[i] = string(b)
	}
	return s, nil
}

// Pos is where path is cut: just after the first extension found
// (trying them in order), ASCII letters compared without case and any
// byte beyond ASCII never equal to one of an extension, so that no
// Unicode case-folding of ".php" (a fullwidth "ｐ", a Kelvin sign) names
// a script. Without extensions it is 0 (the whole path is PATH_INFO, as
// in Caddy); -1 when no extension is in path.
func (s Split) Pos(path string) int {
	if len(s) == 0 {
		return 0
	}
	for _, ext := range s {
		if ext == "" || len(ext) > len(path) {
			continue
		}
	search:
		for i := 0; i <= len(path)-len(ext); i++ {
			for j := 0; j < len(ext); j++ {
				c := path[i+j]
				if c >= utf8.RuneSelf {
					continue search
				}
				if 'A' <= c && c <= 'Z' {
					c += 'a' - 'A'
				}
				if c != ext[j] {
					continue search
				}
			}
			return i + len(ext)
		}
	}
	return -1
}

// Script is the part of path that names the script: up to the split, or
// all of it when no extension is in it.
func (s Split) Script(path string) string {
	if pos := s.Pos(path); pos > -1 {
		return path[:pos]
	}
	return path
}

// FileSplit is the file matcher's split_path: the first extension of
// exts found in path (ASCII letters without case, as Pos), when it ends
// the path or a path segment, cuts path there. Otherwise path comes back
// whole, with no remainder. Like Caddy's matcher, an extension at the
// very end of path is not looked for, which gives the same answer.
func FileSplit(path string, exts []string) (before, remainder string) {
	for _, ext := range exts {
		idx := indexFoldASCII(path, ext)
		if idx < 0 {
			continue
		}
		pos := idx + len(ext)
		if pos != len(path) && path[pos] != '/' {
			continue
		}
		return path[:pos], path[pos:]
	}
	return path, ""
}

// indexFoldASCII is the first index of needle in haystack, ASCII letters
// compared without case, bytes beyond ASCII only equal to themselves.
// As Caddy's indexFold, it does not look at the last position.
func indexFoldASCII(haystack, needle string) int {
	n := len(needle)
outer:
	for i := 0; i+n < len(haystack); i++ {
		for j := 0; j < n; j++ {
			if lowerASCII(haystack[i+j]) != lowerASCII(needle[j]) {
				continue outer
			}
		}
		return i
	}
	return -1
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
