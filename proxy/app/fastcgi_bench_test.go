package app

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pollproxy/pollproxy/internal/phpfpmtest"
	"github.com/pollproxy/pollproxy/proxy/server/servertest"
)

// benchPage is scripts/bench-php's page: about 1 KiB of HTML.
const benchPage = `<?php
header("Content-Type: text/html");
echo str_repeat("pollproxy ", 100), "\n";
`

// BenchmarkPHPFastCGI proxies one GET per iteration over cleartext
// HTTP/1.1, on one kept-alive client connection, through a whole
// instance (one loop) to a real php-fpm on a unix socket: the request
// scripts/bench-php makes. "php_fastcgi" is the directive, with its file
// matchers asking the disk (in the file pool) on every request;
// "transport" is the same page through reverse_proxy's transport fastcgi
// alone. The client allocates nothing per request, so the allocations
// reported are the proxy's (php-fpm runs in its own processes).
func BenchmarkPHPFastCGI(b *testing.B) {
	fpm := phpfpmtest.Start(b, 0)
	root := phpfpmtest.Site(b, map[string]string{"index.php": benchPage})
	up := "unix/" + fpm.Sock
	b.Run("php_fastcgi", func(b *testing.B) {
		benchPHP(b, fmt.Sprintf("\troot * %s\n\tphp_fastcgi %s\n", root, up))
	})
	b.Run("transport", func(b *testing.B) {
		benchPHP(b, fmt.Sprintf("\troot * %s\n\trewrite * /index.php?{query}\n\treverse_proxy %s {\n\t\ttransport fastcgi {\n\t\t\tsplit .php\n\t\t}\n\t}\n", root, up))
	})
}

// benchPHP starts an instance serving site over cleartext HTTP/1.1 and
// runs b.N requests for /blog/post?id=1 through it.
func benchPHP(b *testing.B, site string) {
	dir := b.TempDir()
	port := servertest.FreePort(b)
	file := filepath.Join(dir, "Caddyfile")
	caddyfile := fmt.Sprintf("{\n\tloops 1\n\tadmin off\n\tstorage file_system %s\n\tdefault_bind 127.0.0.1\n}\n\nhttp://127.0.0.1:%d {\n%s}\n",
		filepath.Join(dir, "storage"), port, site)
	if err := os.WriteFile(file, []byte(caddyfile), 0o644); err != nil {
		b.Fatal(err)
	}
	cfg, err := Load(file)
	if err != nil {
		b.Fatal(err)
	}
	in, err := Start(cfg, Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Version: "test"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { in.Close() })
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	req := []byte("GET /blog/post?id=1 HTTP/1.1\r\nHost: 127.0.0.1\r\nUser-Agent: bench/1.0\r\nAccept: */*\r\n\r\n")
	buf := make([]byte, 16<<10)
	// The page's response is chunked (php-fpm gives no length); it ends
	// with the last chunk.
	end := []byte("\r\n0\r\n\r\n")
	one := func() {
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		n := 0
		for n < len(end) || !bytes.Equal(buf[n-len(end):n], end) {
			if n == len(buf) {
				b.Fatalf("response longer than %d bytes", len(buf))
			}
			m, err := c.Read(buf[n:])
			if err != nil {
				b.Fatalf("after %q: %v", buf[:n], err)
			}
			n += m
		}
		if !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200 ")) || !bytes.Contains(buf[:n], []byte("pollproxy pollproxy")) {
			b.Fatalf("response %q", buf[:n])
		}
	}
	for range 20 { // the connection to php-fpm, the pools' buffers
		one()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		one()
	}
}
