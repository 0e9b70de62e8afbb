//go:build unix

package netpoll

import (
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkWait measures one wait with N idle descriptors registered and
// one active: the poll-versus-epoll curve. Each iteration makes the active
// descriptor readable, waits, and drains it.
func BenchmarkWait(b *testing.B) {
	for _, name := range Available() {
		for _, idle := range []int{10, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/idle=%d", name, idle), func(b *testing.B) {
				p := openPoller(b, name)
				for i := 0; i < idle/2; i++ { // both ends idle: two per pair
					x, y := socketPair(b)
					p.Add(x, Read, Token(2*i+2))
					p.Add(y, Read, Token(2*i+3))
				}
				active, peer := socketPair(b)
				if err := p.Add(active, Read, 1); err != nil {
					b.Fatal(err)
				}
				evs := make([]Ready, 64)
				one, buf := []byte{1}, make([]byte, 16)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					unix.Write(peer, one)
					n, err := p.Wait(evs, -1)
					if err != nil || n != 1 || evs[0].Token != 1 {
						b.Fatalf("wait = %d %v %v", n, evs[:n], err)
					}
					unix.Read(active, buf)
				}
			})
		}
	}
}
