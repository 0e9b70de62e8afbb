package tls

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImportsStandardLibraryOnly keeps the session and the handshake pool,
// which the loops run, free of certificate management: its non-test files
// may import the standard library, golang.org/x packages and offload
// (whose own imports are checked the same way), nothing else (certmagic,
// zap and Redis belong in tls/certs and tls/redisstore).
func TestImportsStandardLibraryOnly(t *testing.T) {
	const offload = "github.com/pollproxy/pollproxy/offload"
	checkImports(t, ".", func(path string) bool { return standardOrX(path) || path == offload })
	checkImports(t, "../offload", standardOrX)
}

// checkImports fails t for every import of dir's non-test files that ok
// refuses.
func checkImports(t *testing.T, dir string, ok func(path string) bool) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		checked++
		for _, imp := range f.Imports {
			path, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				t.Fatal(err)
			}
			if !ok(path) {
				t.Errorf("%s imports %s: only the standard library and golang.org/x may be imported here", name, path)
			}
		}
	}
	if checked == 0 {
		t.Fatalf("no non-test Go files found in %s", dir)
	}
}

// standardOrX reports whether path is a standard library package (its
// first element has no dot, as the go command decides) or under
// golang.org/x.
func standardOrX(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".") || strings.HasPrefix(path, "golang.org/x/")
}
