package netpoll

import "golang.org/x/sys/unix"

// The per-socket keep-alive options (keepalive.go): macOS names the idle
// time TCP_KEEPALIVE.
const (
	keepAliveTunable = true
	tcpKeepIdle      = unix.TCP_KEEPALIVE
	tcpKeepIntvl     = unix.TCP_KEEPINTVL
	tcpKeepCnt       = unix.TCP_KEEPCNT
)
