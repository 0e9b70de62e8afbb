package config

import (
	"fmt"
	"io/fs"
	"net"
	"strconv"
	"strings"
)

// AdminAddress is where the admin listener listens: Caddy's address forms
// host:port, or unix//path/to.sock with an optional |MODE (octal file
// permissions, 0200 by default, the owner's write bit required), as Caddy
// writes a unix socket.
type AdminAddress struct {
	Network string // "tcp" or "unix"
	Address string // host:port, or the socket's path
	Mode    fs.FileMode
}

// ParseAdminAddress reads an admin address.
func ParseAdminAddress(s string) (AdminAddress, error) {
	if rest, ok := strings.CutPrefix(s, "unix/"); ok {
		a := AdminAddress{Network: "unix", Address: rest, Mode: 0o200}
		if path, mode, found := strings.Cut(rest, "|"); found {
			m, err := strconv.ParseUint(mode, 8, 32)
			if err != nil {
				return a, fmt.Errorf("%q: the socket's mode %q is not octal permission bits such as 0200", s, mode)
			}
			a.Address, a.Mode = path, fs.FileMode(m)
			if a.Mode&0o200 == 0 {
				return a, fmt.Errorf("%q: the socket's owner needs write permission (0200) to connect", s)
			}
		}
		if a.Address == "" {
			return a, fmt.Errorf("%q: want unix//path/to/admin.sock", s)
		}
		return a, nil
	}
	if _, _, err := net.SplitHostPort(s); err != nil {
		return AdminAddress{}, fmt.Errorf("%q: want host:port (e.g. 127.0.0.1:2019), unix//path/to.sock or off", s)
	}
	return AdminAddress{Network: "tcp", Address: s}, nil
}
