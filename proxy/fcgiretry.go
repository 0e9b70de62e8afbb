package proxy

// A kept FastCGI connection that php-fpm closed (a worker retired at
// pm.max_requests, a restart) may be handed to a request before its
// close is seen. The request then fails before any response byte, and is
// sent again on a fresh connection (exchange.canRetry): its head is kept
// anyway, and the FCGI_STDIN records sent after it are kept here too
// while they are small, so that a POST is retried as a GET is.

import "github.com/pollproxy/pollproxy/proxy/fastcgi"

// fcgiReplayMax is the most request body (framed) kept for a retry.
const fcgiReplayMax = 64 << 10

// fcgiAttach starts keeping what the request sends on connection reused
// (a new connection needs no replay: nothing can have closed it under
// the request unseen); early is what goes out with the head.
func (ex *exchange) fcgiAttach(reused bool) {
	ex.replay, ex.replayBody, ex.written = ex.replay[:0], 0, 0
	ex.replayOK = reused && !ex.retried && len(ex.early) <= fcgiReplayMax
	if ex.replayOK {
		ex.replay = append(ex.replay, ex.early...)
		ex.replayBody = ex.earlyBody
	}
}

// fcgiKeep keeps framed records carrying body bytes of the client's for
// a retry, or gives up keeping once they are too many.
func (ex *exchange) fcgiKeep(framed []byte, body int) {
	if !ex.replayOK {
		return
	}
	if len(ex.replay)+len(framed) > fcgiReplayMax {
		ex.replayOK, ex.replay = false, nil
		return
	}
	ex.replay = append(ex.replay, framed...)
	ex.replayBody += body
}

// fcgiKeepStdin is fcgiKeep for body bytes p, framed here.
func (ex *exchange) fcgiKeepStdin(p []byte) {
	if !ex.replayOK {
		return
	}
	if len(ex.replay)+len(p)+fastcgi.StreamFraming(len(p)) > fcgiReplayMax {
		ex.replayOK, ex.replay = false, nil
		return
	}
	ex.replay = fastcgi.AppendStream(ex.replay, fastcgi.TypeStdin, fcgiRequestID, p)
	ex.replayBody += len(p)
}

// fcgiReplay makes what was kept the body sent with the head on the next
// connection. Of its body bytes, those that reached the socket already
// gave the client its credit; the others give it when they are written.
func (ex *exchange) fcgiReplay() {
	ex.early = append(ex.early[:0], ex.replay...)
	ex.earlyBody = max(ex.replayBody-ex.written, 0)
	ex.replay, ex.replayOK = nil, false
}
