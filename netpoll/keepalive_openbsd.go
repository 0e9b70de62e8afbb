package netpoll

// OpenBSD has no per-socket keep-alive times (keepalive.go): only
// SO_KEEPALIVE is set, and the system's times apply.
const (
	keepAliveTunable = false
	tcpKeepIdle      = 0
	tcpKeepIntvl     = 0
	tcpKeepCnt       = 0
)
