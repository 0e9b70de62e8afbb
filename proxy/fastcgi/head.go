package fastcgi

import (
	"bytes"
	"strconv"
)

// HeadEnd returns the length of the CGI response head at the start of b,
// its blank line included, or -1 while the blank line has not arrived.
// Lines may end in CRLF or LF alone, as a CGI program may write them.
func HeadEnd(b []byte) int {
	start := 0
	for {
		i := bytes.IndexByte(b[start:], '\n')
		if i < 0 {
			return -1
		}
		line := b[start : start+i]
		if len(line) == 0 || len(line) == 1 && line[0] == '\r' {
			return start + i + 1
		}
		start += i + 1
	}
}

// Status is the status a CGI response head asks for, as Caddy reads it:
// the number at the start of its Status field; without one 302 when it
// has a Location field, else 200. ok is false when Status holds no
// number in 100-999.
func Status(head []byte) (status int, ok bool) {
	status, location, statusSeen := 200, false, false
	for len(head) > 0 {
		line := head
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			line, head = head[:i], head[i+1:]
		} else {
			head = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		name, value, found := bytes.Cut(line, []byte{':'})
		if !found {
			continue
		}
		value = bytes.TrimLeft(value, " \t")
		switch {
		case !statusSeen && equalFold(name, "status"):
			statusSeen = true
			num, _, _ := bytes.Cut(bytes.TrimRight(value, " \t"), []byte{' '})
			n, err := strconv.Atoi(string(num))
			if err != nil || n < 100 || n > 999 {
				return 0, false
			}
			status = n
		case equalFold(name, "location") && len(value) > 0:
			location = true
		}
	}
	if !statusSeen && location {
		status = 302
	}
	return status, true
}

func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		if lowerASCII(b[i]) != lower[i] {
			return false
		}
	}
	return true
}
