package server_test

import (
	"bytes"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/pollproxy/pollproxy/netpoll"
	"github.com/pollproxy/pollproxy/netpoll/polltest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// TestFirstFlightGrowsWindows: over a path with a long round trip (a delay
// relay, 30 ms each way), an upload's first flight (the protocol's default
// window of DATA, sent with the client's Finished) is answered with grown
// windows right away: the round trip the TLS handshake measured reaches
// the h2 front end, which needs no PING answered nor any SETTINGS
// acknowledged (this client sends neither) to grow them.
func TestFirstFlightGrowsWindows(t *testing.T) {
	polltest.ForEachBackend(t, netpoll.Available(), func(t *testing.T, backend string) {
		e := startEnv(t, backend, 1, newRoutes().forLoop, nil)
		tc := servertest.DialDelayed(t, e.addr, 30*time.Millisecond, e.tlsConfig("h2"))
		tc.SetDeadline(time.Now().Add(10 * time.Second))
		var out bytes.Buffer // the whole first flight, written at once
		out.WriteString(http2.ClientPreface)
		fr := http2.NewFramer(&out, tc)
		fr.WriteSettings()
		fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: requestBlock("POST", "/slow"), EndHeaders: true})
		chunk := make([]byte, 16384)
		for left := 65535; left > 0; left -= len(chunk) {
			fr.WriteData(1, false, chunk[:min(left, len(chunk))])
		}
		if _, err := tc.Write(out.Bytes()); err != nil {
			t.Fatal(err)
		}
		var streamWin uint32
		var connWin int64 = 65535
		for streamWin < 32<<20 || connWin < 32<<20 {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatalf("before the windows grew (stream %d, connection %d): %v", streamWin, connWin, err)
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if v, ok := f.Value(http2.SettingInitialWindowSize); ok {
					streamWin = v
				}
			case *http2.WindowUpdateFrame:
				if f.StreamID == 0 {
					connWin += int64(f.Increment)
				}
			case *http2.GoAwayFrame:
				t.Fatalf("GOAWAY %v", f.ErrCode)
			}
		}
	})
}
