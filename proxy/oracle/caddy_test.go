package oracle

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// caddy is stock Caddy, built once per test binary from the version
// pinned in tools/caddy/go.mod: a module of its own, so its dependencies
// never move the product's.
var caddy struct {
	once sync.Once
	dir  string
	bin  string
	err  error
	out  []byte
}

func buildCaddy(t *testing.T) string {
	t.Helper()
	caddy.once.Do(func() {
		modfile, err := filepath.Abs("../../tools/caddy/go.mod")
		if err != nil {
			caddy.err = err
			return
		}
		// Not t.TempDir: the binary outlives the first test that builds it.
		if caddy.dir, caddy.err = os.MkdirTemp("", "pollproxy-oracle-caddy"); caddy.err != nil {
			return
		}
		caddy.bin = filepath.Join(caddy.dir, "caddy")
		cmd := exec.Command("go", "build", "-modfile="+modfile, "-o", caddy.bin, "github.com/caddyserver/caddy/v2/cmd/caddy")
		cmd.Dir = filepath.Dir(modfile)
		caddy.out, caddy.err = cmd.CombinedOutput()
	})
	if caddy.err != nil {
		t.Fatalf("building Caddy (tools/caddy/go.mod): %v\n%s", caddy.err, caddy.out)
	}
	return caddy.bin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if caddy.dir != "" {
		os.RemoveAll(caddy.dir)
	}
	os.Exit(code)
}
