//go:build linux || freebsd || dragonfly || netbsd

package netpoll

import "golang.org/x/sys/unix"

// The per-socket keep-alive options (keepalive.go).
const (
	keepAliveTunable = true
	tcpKeepIdle      = unix.TCP_KEEPIDLE
	tcpKeepIntvl     = unix.TCP_KEEPINTVL
	tcpKeepCnt       = unix.TCP_KEEPCNT
)
