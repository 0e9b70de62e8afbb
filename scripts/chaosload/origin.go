package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
)

// originHeader names, in every response, the origin process that made it:
// the client's record of which origin a request reached.
const originHeader = "X-Chaos-Origin"

// origin is one of the soak's origin processes. Its paths carry the
// request's id (/KIND/ID[/N]) so that the access log ties each line to a
// request of the load:
//
//	GET  /get/ID/N    N bytes of the id's pattern
//	POST /up/ID       the body's SHA-256 and length, "HEX N"
//	GET  /ws/ID       a WebSocket echoing every message
//	GET  /sse/ID/N    N server-sent events, 50 ms apart: "id: I", "data: ID-I"
func origin(name string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(originHeader, name)
		kind, id, n, ok := parsePath(r.URL.Path)
		if !ok {
			http.NotFound(w, r)
			return
		}
		switch kind {
		case "get":
			w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
			io.CopyBuffer(w, newPattern(id, n), make([]byte, 32<<10))
		case "up":
			h := sha256.New()
			got, err := io.CopyBuffer(h, r.Body, make([]byte, 32<<10))
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			fmt.Fprintf(w, "%s %d", hex.EncodeToString(h.Sum(nil)), got)
		case "ws":
			c, err := websocket.Accept(w, r, nil)
			if err != nil {
				return
			}
			defer c.CloseNow()
			c.SetReadLimit(1 << 20)
			for {
				typ, msg, err := c.Read(r.Context())
				if err != nil {
					return
				}
				if c.Write(r.Context(), typ, msg) != nil {
					return
				}
			}
		case "sse":
			w.Header().Set("Content-Type", "text/event-stream")
			for i := int64(0); i < n; i++ {
				if _, err := fmt.Fprintf(w, "id: %d\ndata: %d-%d\n\n", i, id, i); err != nil {
					return
				}
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					return
				case <-time.After(50 * time.Millisecond):
				}
			}
		default:
			http.NotFound(w, r)
		}
	})
}

// parsePath reads /KIND/ID[/N].
func parsePath(p string) (kind string, id uint64, n int64, ok bool) {
	f := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(f) < 2 || len(f) > 3 {
		return "", 0, 0, false
	}
	id, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return "", 0, 0, false
	}
	if len(f) == 3 {
		if n, err = strconv.ParseInt(f[2], 10, 64); err != nil || n < 0 || n > 1<<30 {
			return "", 0, 0, false
		}
	}
	return f[0], id, n, true
}

// serveOrigin listens on the loopback address addr, prints the address
// it got and serves until the process is killed.
func serveOrigin(name, addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("-listen %s: want a loopback host:port", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr())
	return (&http.Server{Handler: origin(name), ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
}
